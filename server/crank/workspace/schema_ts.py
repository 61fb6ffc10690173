"""TypeScript declarations from the protocol's JSON Schema (``docs/protocol.schema.json``).

A small translator for the subset ``crank.workspace.schema`` writes: objects become
interfaces, named unions and Literals become type aliases, each description a JSDoc
comment. It reads only the schema document, so what the client compiles against is
what the schema says. The output ends by re-exporting ``./local``, the client's own
declarations (constants, helpers, page-only fields), which are not part of the wire.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["METHOD_MAPS", "render"]

JSON = dict[str, Any]
_HEADER = """\
/**
 * The Crank wire contract (protocol version {version}) as TypeScript types.
 *
 * GENERATED from docs/protocol.schema.json by `python -m crank.workspace.schema`
 * (server/crank/workspace/contract.py is the source): do not edit; `./dev test` fails
 * when this file is stale. The client's own declarations are in ./local.ts.
 */
"""


METHOD_MAPS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    (
        "Requests",
        "Every request a client sends: its params and its result.",
        "requests",
        ("params", "result"),
    ),
    (
        "ServerRequests",
        "Every request the server sends the client: its params and the answer it expects.",
        "serverRequests",
        ("params", "result"),
    ),
    (
        "Notifications",
        "Every notification the server sends: its params.",
        "notifications",
        ("params",),
    ),
)
"""The method maps each generated file ends with: (name, description, the schema's
key, the shapes each entry names). ``schema_lua`` writes the same ones."""


def _name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _type(schema: JSON) -> str:
    if "$ref" in schema:
        return _name(schema["$ref"])
    if "const" in schema:
        return json.dumps(schema["const"])
    if "enum" in schema:
        return " | ".join(json.dumps(value) for value in schema["enum"])
    if "anyOf" in schema:
        return " | ".join(_type(option) for option in schema["anyOf"])
    kind = schema.get("type")
    if kind == "string":
        return "string"
    if kind in ("integer", "number"):
        return "number"
    if kind == "boolean":
        return "boolean"
    if kind == "null":
        return "null"
    if kind == "array":
        item = _type(schema["items"])
        return (
            f"{item}[]" if item.isidentifier() or item in ("string", "number") else f"Array<{item}>"
        )
    if kind == "object":
        extra = schema.get("additionalProperties")
        return (
            f"Record<string, {_type(extra)}>"
            if isinstance(extra, dict)
            else "Record<string, unknown>"
        )
    return "unknown"


def _doc(text: str, indent: str = "") -> list[str]:
    if not text:
        return []
    safe = text.replace("*/", "*\\/")
    return [f"{indent}/** {safe} */"]


def _declaration(name: str, schema: JSON) -> list[str]:
    lines = _doc(schema.get("description", ""))
    if "properties" in schema:
        required = set(schema.get("required", ()))
        lines.append(f"export interface {name} {{")
        for key, prop in schema["properties"].items():
            lines += _doc(prop.get("description", ""), "  ")
            mark = "" if key in required else "?"
            lines.append(
                f"  {json.dumps(key) if not key.isidentifier() else key}{mark}: {_type(prop)};"
            )
        lines.append("}")
    else:
        lines.append(f"export type {name} = {_type(schema)};")
    return lines


def _map(name: str, doc: str, entries: JSON, fields: tuple[str, ...]) -> list[str]:
    lines = [f"/** {doc} */", f"export interface {name} {{"]
    for method, shapes in entries.items():
        parts = "; ".join(f"{field}: {_type(shapes[field])}" for field in fields)
        lines.append(f"  {json.dumps(method)}: {{ {parts} }};")
    lines.append("}")
    return lines


def render(schema: JSON) -> str:
    """The whole ``types.ts``: every ``$defs`` entry, then the method and event maps."""
    out = [_HEADER.format(version=schema["protocolVersion"])]
    out.append(f"export const PROTOCOL_VERSION = {schema['protocolVersion']};")
    out.append("")
    for name, definition in schema["$defs"].items():
        out += _declaration(name, definition)
        out.append("")
    for name, doc, key, fields in METHOD_MAPS:
        out += _map(name, doc, schema[key], fields)
        out.append("")
    out.append("/** Every event's `type`, as `crank/event` carries it. */")
    out.append('export type EventType = CrankEvent["type"];')
    out.append("")
    out.append('export * from "./local";')
    return "\n".join(out) + "\n"
