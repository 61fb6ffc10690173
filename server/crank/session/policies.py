"""Request-view policies: pure functions from a view and a small state to what is sent.

The record is never changed: a policy only decides what one request carries. Each is a
function of its inputs alone (no clock, no randomness), so the same view and state give
the same request bytes, and a policy can be unit-tested without a model. The state a
policy needs between requests (how far results have been cleared) is handed back to it.

- ``clear_old_results``: once the request passes ``limit`` tokens, every large tool
  result before a boundary is replaced by a short note that says what was there and how
  to get it again. The boundary jumps forward to leave only about ``keep_tokens`` of
  recent messages untouched, so it moves seldom and in big steps, and consecutive
  requests keep sharing their prefix (and the provider's cache).
- ``cache_marks``: where the breakpoints go (the end of the previous request and the
  end of this one); the vendor layer only renders them.
- ``Policy``: which of them a setting turns on. ``default`` = clear, compact when
  clearing is not enough, mark the cache.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from crank.agent.messages import Message, ToolResultMessage, tool_calls

MIN_CLEAR_CHARS = 600
"""Results shorter than this cost less than the re-read a note would cause."""
NOTE = (
    "[Result cleared from the context to save room: the {name} call with arguments "
    "{arguments} returned {chars} characters here. Call {name} again with the same "
    "arguments if you need it.]"
)
PolicyName = Literal["none", "cache", "clear", "compact", "default"]
"""The context policies a user can name (docs/context.md says what each does)."""
POLICY_NAMES: tuple[PolicyName, ...] = get_args(PolicyName)


@dataclass(frozen=True)
class Policy:
    clear: bool
    compact: bool
    cache: bool

    @classmethod
    def named(cls, name: str) -> Policy:
        """The policy a setting names; an unknown name is refused, naming the choices."""
        table = {
            "none": cls(False, False, False),
            "cache": cls(False, False, True),
            "clear": cls(True, False, True),
            "compact": cls(False, True, True),
            "default": cls(True, True, True),
        }
        if name not in table:
            raise ValueError(
                f"unknown context policy {name!r}; choose one of {', '.join(POLICY_NAMES)}"
            )
        return table[name]


@dataclass(frozen=True)
class ClearState:
    boundary: int = 0
    """Large tool results at view positions before this are sent as notes."""


def _arguments_of(view: Sequence[Message]) -> dict[str, str]:
    found: dict[str, str] = {}
    for message in view:
        for call in tool_calls(message):
            text = json.dumps(call["arguments"], ensure_ascii=False, sort_keys=True)
            found[call["id"]] = text if len(text) <= 300 else text[:300] + "...}"
    return found


def _note(result: ToolResultMessage, arguments: str) -> ToolResultMessage:
    text = NOTE.format(name=result["toolName"], arguments=arguments, chars=len(result["content"]))
    note: ToolResultMessage = {**result, "content": text}
    note.pop("images", None)  # a cleared result's images go with its text
    return note


def _clearable(message: Message) -> bool:
    return message["role"] == "toolResult" and (
        len(message["content"]) >= MIN_CLEAR_CHARS or bool(message.get("images"))
    )


def apply_clearing(view: Sequence[Message], boundary: int) -> list[Message]:
    """``view`` with every large result before ``boundary`` replaced by its note."""
    if boundary <= 0:
        return list(view)
    arguments = _arguments_of(view[:boundary])
    sent: list[Message] = []
    for position, message in enumerate(view):
        if position < boundary and _clearable(message):
            assert message["role"] == "toolResult"
            sent.append(_note(message, arguments.get(message["toolCallId"], "{}")))
        else:
            sent.append(message)
    return sent


def clear_old_results(
    view: Sequence[Message],
    state: ClearState,
    *,
    tokens: Callable[[Sequence[Message]], int],
    limit: int,
    keep_tokens: int,
    size: Callable[[Message], int],
) -> tuple[list[Message], ClearState]:
    """Clear as far as ``state`` says; if the request is still over ``limit``, move the
    boundary so that only about ``keep_tokens`` of the newest messages are untouched."""
    sent = apply_clearing(view, state.boundary)
    if tokens(sent) <= limit:
        return sent, state
    position, kept = len(view), 0
    while position > 0:
        kept += size(view[position - 1])
        if kept > keep_tokens:
            break
        position -= 1
    boundary = max(state.boundary, position)
    if not any(_clearable(message) for message in view[state.boundary : boundary]):
        return sent, state  # moving would change nothing sent, only the cache's prefix
    return apply_clearing(view, boundary), ClearState(boundary)


def cache_marks(view: Sequence[Message]) -> tuple[int, ...]:
    """Breakpoints after the last message the previous request sent, and after this
    request's last message: the first is read from the cache, the second written."""
    if not view:
        return ()
    last = len(view) - 1
    previous = next(
        (i - 1 for i in range(last, -1, -1) if view[i]["role"] == "assistant"),
        -1,
    )
    return tuple(sorted({i for i in (previous, last) if i >= 0}))
