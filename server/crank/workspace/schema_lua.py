"""LuaCATS annotations from the protocol's JSON Schema (``docs/protocol.schema.json``).

The Neovim client's statement of the wire, as ``schema_ts`` is the VS Code client's: a
translator for the subset ``crank.workspace.schema`` writes. Objects become
``---@class crank.Name`` with a ``---@field`` per key (``name?`` when optional),
Literals and named unions ``---@alias``, each description the text after the type.
lua-language-server (and any LuaCATS reader) checks the plugin against them; Neovim
itself only runs the module, which returns the protocol version.
"""

from __future__ import annotations

import json
from typing import Any

from .schema_ts import METHOD_MAPS

__all__ = ["render"]

JSON = dict[str, Any]
PREFIX = "crank."
"""Every generated name is under ``crank.`` so none clashes with another plugin's."""
_HEADER = """\
-- The Crank wire contract (protocol version {version}) as LuaCATS annotations.
--
-- GENERATED from docs/protocol.schema.json by `python -m crank.workspace.schema`
-- (server/crank/workspace/contract.py is the source): do not edit; `./dev test` fails
-- when this file is stale. Types are named crank.<Name>, as in the schema's $defs.
"""


def _name(ref: str) -> str:
    return PREFIX + ref.rsplit("/", 1)[-1]


def _type(schema: JSON) -> str:
    if "$ref" in schema:
        return _name(schema["$ref"])
    if "const" in schema:
        return _literal(schema["const"])
    if "enum" in schema:
        return "|".join(_literal(value) for value in schema["enum"])
    if "anyOf" in schema:
        return "|".join(_type(option) for option in schema["anyOf"])
    kind = schema.get("type")
    if kind == "string":
        return "string"
    if kind == "integer":
        return "integer"
    if kind == "number":
        return "number"
    if kind == "boolean":
        return "boolean"
    if kind == "null":
        return "nil"
    if kind == "array":
        item = _type(schema["items"])
        return f"({item})[]" if "|" in item else f"{item}[]"
    if kind == "object":
        extra = schema.get("additionalProperties")
        return f"table<string, {_type(extra)}>" if isinstance(extra, dict) else "table<string, any>"
    return "any"


def _literal(value: Any) -> str:
    if value is None:
        return "nil"
    return json.dumps(value)


def _text(text: str) -> str:
    """A description on one line (LuaCATS reads the rest of the annotation line)."""
    return " ".join(text.split())


def _key(key: str) -> str:
    return key if key.isidentifier() else f"[{json.dumps(key)}]"


def _declaration(name: str, schema: JSON) -> list[str]:
    description = _text(schema.get("description", ""))
    lines = [f"--- {description}"] if description else []
    if "properties" in schema:
        required = set(schema.get("required", ()))
        lines.append(f"---@class {PREFIX}{name}")
        for key, prop in schema["properties"].items():
            mark = "" if key in required else "?"
            doc = _text(prop.get("description", ""))
            lines.append(f"---@field {_key(key)}{mark} {_type(prop)}{' ' + doc if doc else ''}")
    else:
        lines.append(f"---@alias {PREFIX}{name} {_type(schema)}")
    return lines


def _map(name: str, doc: str, entries: JSON, fields: tuple[str, ...]) -> list[str]:
    lines = [f"--- {doc}", f"---@class {PREFIX}{name}"]
    for method, shapes in entries.items():
        parts = ", ".join(f"{field}: {_type(shapes[field])}" for field in fields)
        lines.append(f"---@field [{json.dumps(method)}] {{ {parts} }}")
    return lines


def render(schema: JSON) -> str:
    """The whole ``types.lua``: every ``$defs`` entry, then the method maps."""
    out = [_HEADER.format(version=schema["protocolVersion"])]
    for name, definition in schema["$defs"].items():
        out += _declaration(name, definition)
        out.append("")
    for name, doc, key, fields in METHOD_MAPS:
        out += _map(name, doc, schema[key], fields)
        out.append("")
    events = "|".join(_literal(kind) for kind in schema["events"])
    out.append("--- Every event's `type`, as `crank/event` carries it.")
    out.append(f"---@alias {PREFIX}EventType {events}")
    out.append("")
    out.append(f"return {{ PROTOCOL_VERSION = {schema['protocolVersion']} }}")
    return "\n".join(out) + "\n"
