"""The JSON Schema of the wire contract, generated from ``crank.workspace.contract``.

``python -m crank.workspace.schema`` writes ``docs/protocol.schema.json`` and, from that
file's content alone, ``vscode-client/src/protocol/types.ts`` (``schema_ts``) and the
Neovim client's LuaCATS annotations ``nvim-client/lua/crank/types.lua`` (``schema_lua``);
``--check`` writes nothing and exits 1 naming each file that is stale (the test suite
runs the same comparison). The translation is our own because msgspec's schema
generator takes no union of TypedDicts, and every event union is one.

The document is JSON Schema 2020-12: ``$defs`` holds every type by its Python name
(a named union or Literal by its alias's name), and ``requests``, ``serverRequests``,
``notifications`` and ``events`` name each method's (or event type's) shapes by
``$ref``. Nothing here decides a shape: the contract module does.
"""

from __future__ import annotations

import ast
import inspect
import json
import sys
import textwrap
import types
import typing
from pathlib import Path
from typing import Any, Literal, NotRequired, Required, get_args, get_origin, is_typeddict

__all__ = [
    "LUA_FILE",
    "PROTOCOL_VERSION",
    "SCHEMA_FILE",
    "TYPES_FILE",
    "build",
    "main",
    "render",
    "render_lua",
]

PROTOCOL_VERSION = 1
REPO = Path(__file__).resolve().parents[3]
SCHEMA_FILE = REPO / "docs" / "protocol.schema.json"
TYPES_FILE = REPO / "vscode-client" / "src" / "protocol" / "types.ts"
LUA_FILE = REPO / "nvim-client" / "lua" / "crank" / "types.lua"
JSON = dict[str, Any]


def _aliases() -> dict[str, Any]:
    """Unions and Literals that have a name in the code, so the schema names them too."""
    from crank.agent import events, messages, tools
    from crank.agent.harness import QueueKind
    from crank.prompt.builder import SourceKind
    from crank.session.index import SessionEnd
    from crank.tools.context import CommandPreview, DiffPreview, PathPreview
    from crank.tools.sandbox import SandboxMode

    from . import contract
    from .commands import CommandKind
    from .host import WhileRunning
    from .permissions import PermissionDecision, PermissionMode

    return {
        "CrankEvent": contract.EVENT_UNION,
        "Message": messages.Message,
        "ContentBlock": messages.ContentBlock,
        "Preview": DiffPreview | CommandPreview | PathPreview,
        "AttachedImage": contract.InlineImage | contract.PathImage,
        "StopReason": messages.StopReason,
        "ErrorKind": messages.ErrorKind,
        "DeltaKind": events.DeltaKind,
        "CompactionReason": events.CompactionReason,
        "PermissionMode": PermissionMode,
        "PermissionDecision": PermissionDecision,
        "WhileRunning": WhileRunning,
        "QueueKind": QueueKind,
        "SandboxMode": SandboxMode,
        "CommandKind": CommandKind,
        "SourceKind": SourceKind,
        "SessionEnd": SessionEnd,
        "ToolKind": tools.ToolKind,
        "ResultShown": tools.ResultShown,
    }


class _Translator:
    def __init__(self) -> None:
        self.defs: dict[str, JSON] = {}
        self.owners: dict[str, object] = {}
        self.aliases = _aliases()

    def ref(self, name: str) -> JSON:
        return {"$ref": f"#/$defs/{name}"}

    def of(self, tp: Any) -> JSON:
        for name, alias in self.aliases.items():
            if tp is alias or (get_origin(tp) is get_origin(alias) and tp == alias):
                if name not in self.defs:
                    self.defs[name] = {}  # reserved first: a union may refer to itself
                    self.defs[name] = self._plain(alias)
                return self.ref(name)
        return self._plain(tp)

    def _plain(self, tp: Any) -> JSON:
        if tp is Any or tp is object:
            return {}
        if tp is type(None) or tp is None:
            return {"type": "null"}
        if tp is str:
            return {"type": "string"}
        if tp is bool:
            return {"type": "boolean"}
        if tp is int:
            return {"type": "integer"}
        if tp is float:
            return {"type": "number"}
        if is_typeddict(tp):
            return self._typeddict(tp)
        origin = get_origin(tp)
        args = get_args(tp)
        if origin is Literal:
            return {"const": args[0]} if len(args) == 1 else {"enum": list(args)}
        if origin in (typing.Union, types.UnionType):
            return {"anyOf": [self.of(arg) for arg in args]}
        if origin is list:
            return {"type": "array", "items": self.of(args[0])}
        if origin is dict:
            value = self.of(args[1])
            return (
                {"type": "object"}
                if not value
                else {"type": "object", "additionalProperties": value}
            )
        raise TypeError(f"no JSON Schema for {tp!r}")

    def _typeddict(self, tp: Any) -> JSON:
        name = tp.__name__
        owner = self.owners.setdefault(name, tp)
        if owner is not tp:
            raise TypeError(f"two TypedDicts are named {name}: {owner!r} and {tp!r}")
        if name not in self.defs:
            self.defs[name] = {}
            self.defs[name] = self._object(tp)
        return self.ref(name)

    def _object(self, tp: Any) -> JSON:
        hints = typing.get_type_hints(tp, include_extras=True)
        properties: JSON = {}
        required: list[str] = []
        notes = _field_docs(tp)
        for key, hint in hints.items():
            origin = get_origin(hint)
            needed = bool(getattr(tp, "__total__", True))
            if origin is NotRequired:
                needed, hint = False, get_args(hint)[0]
            elif origin is Required:
                needed, hint = True, get_args(hint)[0]
            properties[key] = self.of(hint)
            if key in notes and "$ref" not in properties[key]:
                properties[key] = {**properties[key], "description": notes[key]}
            if needed:
                required.append(key)
        schema: JSON = {"type": "object", "title": tp.__name__}
        doc = _doc(tp)
        if doc:
            schema["description"] = doc
        schema["properties"] = properties
        schema["required"] = required
        return schema


def _field_docs(tp: Any) -> dict[str, str]:
    """The string under each field of a TypedDict (and of its bases), from the source:
    the docstring convention this code base documents fields with."""
    found: dict[str, str] = {}
    for klass in reversed(tp.__mro__):
        if klass.__module__ in ("builtins", "typing"):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for field, after in zip(body, [*body[1:], None], strict=True):
            if (
                isinstance(field, ast.AnnAssign)
                and isinstance(field.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                found[field.target.id] = " ".join(after.value.value.split())
    return found


def _doc(tp: Any) -> str:
    doc = tp.__dict__.get("__doc__")
    return " ".join(doc.split()) if isinstance(doc, str) else ""


def build() -> JSON:
    """The schema document, its keys in a stable order (the file is compared as text)."""
    from crank.agent.messages import ImageBlock

    from . import contract

    t = _Translator()

    def pair(shapes: tuple[type, type]) -> JSON:
        return {"params": t.of(shapes[0]), "result": t.of(shapes[1])}

    requests = {method: pair(shapes) for method, shapes in contract.REQUESTS.items()}
    server_requests = {m: pair(shapes) for m, shapes in contract.SERVER_REQUESTS.items()}
    notifications = {m: {"params": t.of(tp)} for m, tp in contract.NOTIFICATIONS.items()}
    t.of(contract.EVENT_UNION)
    t.of(ImageBlock)
    for details in contract.TOOL_DETAILS:
        t.of(details)
    events: JSON = {}
    for event in get_args(contract.EVENT_UNION):
        (kind,) = get_args(typing.get_type_hints(event)["type"])
        events[kind] = t.of(event)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://crank.dev/protocol/1/schema.json",
        "title": "Crank protocol",
        "description": (
            "The wire contract between Crank and its clients (docs/protocol.md). "
            "Generated by `python -m crank.workspace.schema` from "
            "server/crank/workspace/contract.py: do not edit."
        ),
        "protocolVersion": PROTOCOL_VERSION,
        "requests": requests,
        "serverRequests": server_requests,
        "notifications": notifications,
        "events": events,
        "$defs": dict(sorted(t.defs.items())),
    }


def dumps(schema: JSON) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def render(schema: JSON) -> str:
    """``types.ts`` from the schema document (``schema_ts``)."""
    from .schema_ts import render as to_typescript

    return to_typescript(schema)


def render_lua(schema: JSON) -> str:
    """``types.lua`` from the schema document (``schema_lua``)."""
    from .schema_lua import render as to_lua

    return to_lua(schema)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    schema_text = dumps(build())
    generated = {
        SCHEMA_FILE: schema_text,
        TYPES_FILE: render(json.loads(schema_text)),
        LUA_FILE: render_lua(json.loads(schema_text)),
    }
    stale = [
        path
        for path, text in generated.items()
        if not path.is_file() or path.read_text(encoding="utf-8") != text
    ]
    if "--check" in args:
        for path in stale:
            print(f"{path} is stale: run python -m crank.workspace.schema", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.write_text(generated[path], encoding="utf-8", newline="\n")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
