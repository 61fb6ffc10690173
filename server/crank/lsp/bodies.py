"""A frame's body as a JSON-RPC message: decoded strictly, depth-bounded, its id read
even when the rest cannot be.

``frames.Inbox`` refuses what ``decode`` raises; ``early.py`` uses the same rules
before pygls is imported, so the first answer and every later one judge a body alike.
Nothing here imports pygls or lsprotocol.
"""

from __future__ import annotations

import json
from typing import Any

from crank.agent import wiretext

from .errors import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR

_DECODER = json.JSONDecoder()
MAX_DEPTH = 100
"""How deeply a message may nest objects and arrays (LSP's deepest are about 8)."""


class Undecodable(Exception):
    """A body that cannot be taken as a message; ``msg_id`` when it could be read."""

    def __init__(self, code: int, reason: str, msg_id: Any = None) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason
        self.msg_id = msg_id


def valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def decode(body: bytes) -> Any:
    """The JSON value of a body, or ``Undecodable`` saying why not."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Undecodable(
            PARSE_ERROR, f"the body is not UTF-8 ({exc.reason} at byte {exc.start})"
        ) from None
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        found = _top_level_id(text)
        raise Undecodable(
            INVALID_REQUEST, f"the message nests deeper than {MAX_DEPTH} levels", found
        ) from None
    except ValueError as exc:  # JSONDecodeError, NaN, an integer too long to convert
        raise Undecodable(PARSE_ERROR, f"the body is not JSON: {exc}") from None
    if _too_deep(value):
        found = value.get("id") if isinstance(value, dict) else None
        raise Undecodable(
            INVALID_REQUEST, f"the message nests deeper than {MAX_DEPTH} levels", found
        )
    if wiretext.may_hold_surrogate(body):
        return _without_surrogates(value)
    return value


def _without_surrogates(value: Any) -> Any:
    """A lone surrogate (valid JSON ``"\\ud800"``, not text) in a request is refused
    with -32602 naming the field (id null when it is in the id); a notification or an
    answer, which nobody can be told about, goes on with the text escaped."""
    where = wiretext.incoming_surrogate(value)
    if where is None:
        return value
    if isinstance(value, dict) and "method" in value and "id" in value:
        msg_id = None if where.split(".")[0] == "id" else value.get("id")
        raise Undecodable(INVALID_PARAMS, wiretext.refusal(where), msg_id)
    return wiretext.clean(value)


def _too_deep(value: Any) -> bool:
    if not isinstance(value, dict | list):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _top_level_id(text: str) -> Any:
    """The ``id`` of a top-level object, read without building the (too deep) rest."""
    start = len(text) - len(text.lstrip())
    if not text[start:].startswith("{"):
        return None
    depth, previous, index = 0, "", start
    while index < len(text):
        char = text[index]
        if char == '"':
            try:
                key, end = _DECODER.raw_decode(text, index)
            except ValueError:
                return None
            if depth == 1 and previous in "{," and key == "id":
                rest = text[end:].lstrip()
                if rest.startswith(":"):
                    try:
                        found, _ = _DECODER.raw_decode(rest[1:].lstrip())
                    except (ValueError, RecursionError):
                        return None
                    return found
            index, previous = end, '"'
            continue
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
        if char in "{[,:}]":
            previous = char
        index += 1
    return None
