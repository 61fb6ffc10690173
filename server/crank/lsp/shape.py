"""Whether a JSON value fits a shape drawn from lsprotocol (``shape_of.py``), without
importing lsprotocol.

``fits`` is stricter than lsprotocol's converter, never looser: a scalar must have
exactly its JSON type (the converter would also take ``"yes"`` for a boolean), an
object must have its required keys, and keys the shape does not name are ignored, as
the converter ignores them. So params that fit are params the full server accepts;
params that do not fit go to the full server, which answers them (maybe with -32602
naming the field). tests/lsp/test_early_initialize.py holds the two to that.
"""

from __future__ import annotations

import json
import os
from functools import cache
from typing import Any

from .bodies import MAX_DEPTH

Shape = dict[str, Any]
_SCALARS: dict[str, Any] = {
    "null": lambda v: v is None,
    "bool": lambda v: isinstance(v, bool),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "str": lambda v: isinstance(v, str),
    "any": lambda v: True,
}


@cache
def initialize_shape() -> Shape:
    """The shape of ``InitializeParams``, as ``python -m crank.lsp.shape_of`` wrote it."""
    with open(os.path.join(os.path.dirname(__file__), "initialize_shape.json"), "rb") as file:
        shape: Shape = json.load(file)
    return shape


def fits(shape: Shape, value: Any) -> bool:
    """Whether ``value`` fits the shape's root node."""
    return _fits(shape["classes"], shape["root"], value, 0)


def _fits(classes: dict[str, Any], node: Any, value: Any, depth: int) -> bool:
    if depth > MAX_DEPTH:
        return False
    if isinstance(node, str):
        return bool(_SCALARS[node](value))
    kind, inner = node
    if kind == "enum":
        return any(type(value) is type(member) and value == member for member in inner)
    if kind == "union":
        return any(_fits(classes, option, value, depth) for option in inner)
    if kind == "list":
        return isinstance(value, list) and all(
            _fits(classes, inner, item, depth + 1) for item in value
        )
    if kind == "map":
        return isinstance(value, dict) and all(
            _fits(classes, inner, item, depth + 1) for item in value.values()
        )
    if kind == "ref":
        if not isinstance(value, dict):
            return False
        spec = classes[inner]
        fields: dict[str, Any] = spec["fields"]
        return all(key in value for key in spec["required"]) and all(
            _fits(classes, fields[key], item, depth + 1)
            for key, item in value.items()
            if key in fields
        )
    raise ValueError(f"not a shape node: {node!r}")
