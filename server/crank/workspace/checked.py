"""Check a request's params against its type in the contract, before any handler runs.

``check(value, ParamsType)`` walks the ``TypedDict`` of ``contract.REQUESTS`` (and what
it nests: lists, unions, ``Literal`` choices, other ``TypedDict``s) and raises the one
``invalid_params`` error naming the first field that is wrong, in the order the type
declares its fields, so the answer to a bad request no longer depends on which handler
line happens to read which field first. What it promises, and what it leaves alone:

- a required field that is absent (or ``null``) is refused, naming it;
- an optional field may be absent or ``null`` (both mean "not given", as the handlers
  read them);
- a field of the wrong JSON type, a ``Literal`` value outside its choices, a list item
  or a nested object that is wrong: refused with the path (``context[1].range.start.line``);
- fields the type does not name are let through (a newer client may send more), and
  the handlers still apply their own rules on values (a URI that is not a file, ...).
"""

from __future__ import annotations

import functools
import types
from typing import Any, Literal, NotRequired, Required, Union, get_args, get_origin, get_type_hints

from .errors import invalid_params

_JSON_NAMES = {str: "a string", int: "a whole number", float: "a number", bool: "true or false"}


def check(value: Any, expected: Any, where: str = "params") -> None:
    """Raise ``invalid_params`` (naming the field) unless ``value`` fits ``expected``."""
    problem = _problem(value, expected, where)
    if problem is not None:
        raise invalid_params(*problem)


def _is_typeddict(expected: Any) -> bool:
    return isinstance(expected, type) and hasattr(expected, "__required_keys__")


def _problem(value: Any, expected: Any, where: str) -> tuple[str, str] | None:
    origin = get_origin(expected)
    if expected is Any:
        return None
    if origin in (NotRequired, Required):
        return _problem(value, get_args(expected)[0], where)
    if _is_typeddict(expected):
        return _object_problem(value, expected, where)
    if origin is Literal:
        choices = get_args(expected)
        if value in choices and type(value) in {type(c) for c in choices}:
            return None
        return where, f"must be one of {', '.join(str(c) for c in choices)}"
    if origin is list:
        if not isinstance(value, list):
            return where, "must be a list"
        (item,) = get_args(expected)
        for index, element in enumerate(value):
            found = _problem(element, item, f"{where}[{index}]")
            if found is not None:
                return found
        return None
    if origin is dict:
        if not isinstance(value, dict):
            return where, "must be an object"
        _key, item = get_args(expected)
        for key, element in value.items():
            found = _problem(element, item, f"{where}.{key}")
            if found is not None:
                return found
        return None
    if origin in (Union, types.UnionType):
        return _union_problem(value, get_args(expected), where)
    if expected is type(None):
        return None if value is None else (where, "must be null")
    if expected is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return None if ok else (where, "must be a number")
    if expected in _JSON_NAMES:
        ok = isinstance(value, expected) and (expected is bool or not isinstance(value, bool))
        return None if ok else (where, f"must be {_JSON_NAMES[expected]}")
    raise TypeError(f"checked: no rule for {expected!r} (at {where})")


def _object_problem(value: Any, expected: type, where: str) -> tuple[str, str] | None:
    if not isinstance(value, dict):
        return where, "must be an object"
    hints = _hints(expected)
    required = _required(expected)
    prefix = "" if where == "params" else f"{where}."
    for name, hint in hints.items():
        field = f"{prefix}{name}"
        if value.get(name) is None:
            if name in required:
                return field, "is required"
            continue
        found = _problem(value[name], hint, field)
        if found is not None:
            return found
    return None


@functools.cache
def _hints(expected: type) -> dict[str, Any]:
    """A type's resolved field hints, once per type (every request is checked)."""
    return get_type_hints(expected, include_extras=True)


@functools.cache
def _required(expected: type) -> frozenset[str]:
    """The keys the type requires, read from its resolved hints: ``__required_keys__``
    is wrong under ``from __future__ import annotations`` (the contract's), where
    ``NotRequired`` is still a string when the class is made."""
    hints = _hints(expected)
    total = bool(getattr(expected, "__total__", True))
    return frozenset(
        name
        for name, hint in hints.items()
        if get_origin(hint) is Required or (total and get_origin(hint) is not NotRequired)
    )


def _union_problem(value: Any, options: tuple[Any, ...], where: str) -> tuple[str, str] | None:
    """Fits if any option fits; else the problem of the object option the sender meant:
    the one whose required fields are all there, else the one sharing the most of them
    (``{data}`` meant an inline image: its ``mimeType`` is missing); else what fits."""
    problems = [_problem(value, option, where) for option in options]
    if any(p is None for p in problems):
        return None
    if isinstance(value, dict):
        objects = [(o, p) for o, p in zip(options, problems, strict=True) if _is_typeddict(o)]
        for option, found in objects:
            if _required(option) <= value.keys():
                return found
        shared = [(len(_required(o) & value.keys()), p) for o, p in objects]
        best = max((n for n, _ in shared), default=0)
        if best > 0 and [n for n, _ in shared].count(best) == 1:
            return next(p for n, p in shared if n == best)
        shapes = ["{" + ", ".join(sorted(_required(o))) + "}" for o in options if _is_typeddict(o)]
        if shapes:
            return where, f"must be an object with {' or '.join(shapes)}"
    return problems[0]
