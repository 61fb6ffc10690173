"""The JSON shape of ``initialize``'s params, drawn from lsprotocol's own types.

``early.py`` answers ``initialize`` before pygls and lsprotocol are imported, so it
cannot ask lsprotocol whether the params fit. It asks ``shape.fits`` instead, against
``initialize_shape.json``, which this module writes from lsprotocol's classes:
``python -m crank.lsp.shape_of`` rewrites it. tests/lsp/test_early_initialize.py fails
when the file no longer matches the installed lsprotocol (an upgrade moved a field),
and checks the promise that matters: params the shape accepts are params the full
server accepts and answers the same way.

A node is ``"any"``, ``"null"``, ``"bool"``, ``"int"``, ``"float"``, ``"str"``,
``["enum", [value, ...]]``, ``["list", node]``, ``["map", node]``,
``["union", [node, ...]]`` or ``["ref", name]``; ``classes`` maps a class name to
``{"fields": {jsonName: node}, "required": [...]}``. An enum takes only its members;
where LSP lets a client send values of its own, lsprotocol types the field as the enum
or a plain ``str``/``int``, and the union says so.
"""

from __future__ import annotations

import enum
import json
import sys
import types as pytypes
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
from lsprotocol import types as lsp

from .errors import camel_case

SHAPE_FILE = Path(__file__).with_name("initialize_shape.json")


def shape_of(root: type[Any]) -> dict[str, Any]:
    """``{"root": node, "classes": {...}}`` for an lsprotocol class."""
    classes: dict[str, Any] = {}

    def node(hint: Any) -> Any:
        origin = typing.get_origin(hint)
        if origin in (typing.Union, pytypes.UnionType):
            return ["union", [node(arg) for arg in typing.get_args(hint)]]
        if origin is typing.Literal:
            return ["union", [node(type(arg)) for arg in typing.get_args(hint)]]
        if origin is not None and isinstance(origin, type) and issubclass(origin, Mapping):
            return ["map", node(typing.get_args(hint)[1])]
        if origin is not None and isinstance(origin, type) and issubclass(origin, Sequence):
            return ["list", node(typing.get_args(hint)[0])]
        if hint is Any or hint is object:
            return "any"
        if hint is type(None):
            return "null"
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            return ["enum", [member.value for member in hint]]
        if hint is bool:
            return "bool"
        if hint is int:
            return "int"
        if hint is float:
            return "float"
        if hint is str:
            return "str"
        if attrs.has(hint):
            name = hint.__name__
            if name not in classes:
                classes[name] = None  # a cycle refers to it before it is done
                hints = typing.get_type_hints(hint, vars(lsp))
                fields = attrs.fields(hint)
                classes[name] = {
                    "fields": {_wire(f.name): node(hints[f.name]) for f in fields},
                    "required": [_wire(f.name) for f in fields if f.default is attrs.NOTHING],
                }
            return ["ref", name]
        raise TypeError(f"no JSON shape for {hint!r}")

    root_node = node(root)
    return {"root": root_node, "classes": classes}


def _wire(name: str) -> str:
    return camel_case(name.rstrip("_"))


def initialize_shape() -> dict[str, Any]:
    return shape_of(lsp.InitializeParams)


def main() -> int:
    SHAPE_FILE.write_text(json.dumps(initialize_shape(), sort_keys=True) + "\n", "utf-8")
    print(f"wrote {SHAPE_FILE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
