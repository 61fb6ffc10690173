"""Checking the params of ``crank/*`` requests ourselves: a bad one is -32602 naming
the field, never a request left unanswered."""

from __future__ import annotations

from typing import Any, TypeVar

from crank.workspace import invalid_params

_C = TypeVar("_C", bound=str)


class Params:
    """Typed access to one request's params (a JSON object, or absent)."""

    def __init__(self, raw: Any) -> None:
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise invalid_params("params", "must be an object")
        self.raw: dict[str, Any] = raw

    def text(
        self, name: str, *, required: bool = False, choices: tuple[str, ...] = ()
    ) -> str | None:
        value = self.raw.get(name)
        if value is None:
            if required:
                raise invalid_params(name, "is required")
            return None
        if not isinstance(value, str):
            raise invalid_params(name, "must be a string")
        if choices and value not in choices:
            raise invalid_params(name, f"must be one of {', '.join(choices)}")
        return value

    def required_text(self, name: str, choices: tuple[str, ...] = ()) -> str:
        value = self.text(name, required=True, choices=choices)
        assert value is not None
        return value

    def choice(self, name: str, choices: tuple[_C, ...]) -> _C:
        """One of ``choices`` (an enumeration's values, typed as its Literal); required."""
        value = self.required_text(name, choices)
        return next(choice for choice in choices if choice == value)

    def optional_choice(self, name: str, choices: tuple[_C, ...]) -> _C | None:
        value = self.text(name, choices=choices)
        return next((choice for choice in choices if choice == value), None)

    def flag(self, name: str) -> bool:
        value = self.raw.get(name)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise invalid_params(name, "must be true or false")
        return value

    def index(self, name: str) -> int:
        value = self.raw.get(name)
        if value is None:
            raise invalid_params(name, "is required")
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise invalid_params(name, "must be a whole number, 0 or more")
        return value

    def strings(self, name: str, *, one: bool = False) -> list[str] | None:
        """A list of strings (``one``: a single string is taken as a list of one), or
        None when absent."""
        value = self.raw.get(name)
        if value is None:
            return None
        if one and isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            kind = "a string or a list of strings" if one else "a list of strings"
            raise invalid_params(name, f"must be {kind}")
        return value

    def objects(self, name: str) -> list[dict[str, Any]]:
        value = self.raw.get(name)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
            raise invalid_params(name, "must be a list of objects")
        return value


def check_range(value: Any, name: str) -> dict[str, Any] | None:
    """An LSP range ``{start: {line, character}, end: {...}}``, or None."""
    if value is None:
        return None
    try:
        for end in ("start", "end"):
            for key in ("line", "character"):
                number = value[end][key]
                if not isinstance(number, int) or isinstance(number, bool) or number < 0:
                    raise TypeError
    except (TypeError, KeyError):
        raise invalid_params(
            name, "must be a range {start: {line, character}, end: {line, character}}"
        ) from None
    return dict(value)


def check_diagnostics(value: Any, name: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise invalid_params(name, "must be a list of diagnostics")
    for index, diag in enumerate(value):
        where = f"{name}[{index}]"
        if not isinstance(diag, dict):
            raise invalid_params(where, "must be an object")
        check_range(diag.get("range"), f"{where}.range")
        if diag.get("range") is None:
            raise invalid_params(f"{where}.range", "is required")
        if not isinstance(diag.get("message"), str):
            raise invalid_params(f"{where}.message", "must be a string")
    return value
