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
- ``trim_old_turns``: once the request passes ``limit`` tokens, the oldest whole turns
  after the task (the first user message) are left out, down to about ``keep_tokens``
  of the newest, and one note in their place says how many turns were removed, so the
  model looks again instead of concluding it never looked. The cut lands only where a
  turn starts (never on a tool result), so no call is ever parted from its results.
  Like clearing, the boundary moves seldom and in big steps.
- ``cache_marks``: where the breakpoints go (the end of the previous request and the
  end of this one); the vendor layer only renders them.
- ``Policy``: which of them a setting turns on. ``default`` = clear, compact when
  clearing is not enough, mark the cache; ``trim`` = trim, mark the cache.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

from crank.agent.lineage import (
    Lineage,
    LineageList,
    SharedView,
    has_lineage,
    kept,
    same_lineage,
    shared_prefix,
)
from crank.agent.messages import Message, ToolResultMessage, tool_calls

MIN_CLEAR_CHARS = 600
"""Results shorter than this cost less than the re-read a note would cause."""
NOTE = (
    "[Result cleared from the context to save room: the {name} call with arguments "
    "{arguments} returned {chars} characters here. Call {name} again with the same "
    "arguments if you need it.]"
)
TRIM_NOTE = (
    "[{turns} earlier {turn_word} of this conversation ({messages} messages after the task "
    "above) were removed from the context to save room. What they showed is no longer "
    "here: if you need something from them, read the file or run the command again "
    "rather than assuming you never looked.]"
)
PolicyName = Literal["none", "cache", "clear", "compact", "trim", "default"]
"""The context policies a user can name (docs/context.md says what each does)."""
POLICY_NAMES: tuple[PolicyName, ...] = get_args(PolicyName)


@dataclass(frozen=True)
class Policy:
    clear: bool
    compact: bool
    cache: bool
    trim: bool = False

    @classmethod
    def named(cls, name: str) -> Policy:
        """The policy a setting names; an unknown name is refused, naming the choices."""
        table = {
            "none": cls(False, False, False),
            "cache": cls(False, False, True),
            "clear": cls(True, False, True),
            "compact": cls(False, True, True),
            "trim": cls(False, False, True, trim=True),
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
    clean: int = field(default=0, compare=False)
    """A memo, not state: view positions ``boundary``..``clean`` held no large result
    when last looked at, as long as the message before ``clean`` is still
    ``clean_last`` (the view grows at its end). Without it, a long run of small results
    had every turn look through the whole transcript for something to clear."""
    clean_last: Message | None = field(default=None, compare=False, repr=False)


_ARGUMENTS = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode
"""How a note spells a call's arguments. Built once: ``json.dumps`` with options builds
an encoder per call, most of the cost of clearing a resumed record's 30,000 results."""


def _arguments_of(view: Sequence[Message]) -> dict[str, str]:
    found: dict[str, str] = {}
    for message in view:
        for call in tool_calls(message):
            text = _ARGUMENTS(call["arguments"])
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


def newest_within(
    view: Sequence[Message], keep_tokens: int, size: Callable[[Message], int], floor: int = 0
) -> int:
    """The first position of the newest messages whose sizes add up to at most
    ``keep_tokens`` (never before ``floor``): where a policy's untouched tail begins."""
    position, kept = len(view), 0
    while position > floor:
        kept += size(view[position - 1])
        if kept > keep_tokens:
            break
        position -= 1
    return position


TailStart = Callable[[Sequence[Message], int, int], int]
"""``newest_within`` as a caller measures it: (view, keep_tokens, floor) -> position."""


@dataclass(frozen=True)
class _Cleared:
    view: Sequence[Message]
    boundary: int
    head: list[Message]
    """The view's first ``boundary`` messages as sent (the notes in place of results)."""
    lineage: Lineage | None
    """What was sent's lineage (None for a plain list)."""


class PolicyMemo:
    """The last view cleared, remembered between the requests of one session so that
    clearing costs what changed, not the length of the record. The policies stay pure
    functions of their inputs: with or without a memo, the same view and state send the
    same messages.

    What it sends keeps the lineage of the view it was handed (lineage.py): a view
    cleared at the same boundary as the last, of the same lineage, continues the last
    one's history (the same notes, the same messages after them); a new boundary, or a
    view of another lineage, starts a new one. It is a ``SharedView`` over the cleared
    head (built once per boundary) and the view's messages after it, so a request
    copies only those; a plain list gives a plain list."""

    def __init__(self) -> None:
        self._cleared: _Cleared | None = None

    def apply_clearing(self, view: Sequence[Message], boundary: int) -> Sequence[Message]:
        """``apply_clearing``, reusing the notes of the last view cleared at the same
        boundary when the view still starts with the same messages up to it."""
        if boundary <= 0:  # nothing to clear: the view itself, lineage and all
            return view if has_lineage(view) else list(view)
        last = self._cleared
        lineage = None
        if (
            last is not None
            and last.boundary == boundary
            and shared_prefix(view, last.view) >= boundary
        ):
            head = last.head
            if same_lineage(view, last.view):
                lineage = last.lineage
        else:
            head = apply_clearing(view[:boundary], boundary)
        sent: Sequence[Message]
        if has_lineage(view):
            lineage = lineage or Lineage()
            sent = SharedView(head, len(head), view[boundary:], lineage, view.stable)
        else:
            sent = [*head, *view[boundary:]]
        self._cleared = _Cleared(kept(view), boundary, head, lineage)
        return sent


def clear_old_results(
    view: Sequence[Message],
    state: ClearState,
    *,
    tokens: Callable[[Sequence[Message]], int],
    limit: int,
    keep_tokens: int,
    size: Callable[[Message], int],
    memo: PolicyMemo | None = None,
    tail_start: TailStart | None = None,
) -> tuple[Sequence[Message], ClearState]:
    """Clear as far as ``state`` says; if the request is still over ``limit``, move the
    boundary so that only about ``keep_tokens`` of the newest messages are untouched.
    ``memo`` only saves work; ``tail_start`` measures the untouched tail (by default
    ``newest_within`` with ``size``)."""
    clearing = apply_clearing if memo is None else memo.apply_clearing
    sent = clearing(view, state.boundary)
    if tokens(sent) <= limit:
        return sent, state
    if tail_start is None:
        position = newest_within(view, keep_tokens, size)
    else:
        position = tail_start(view, keep_tokens, 0)
    boundary = max(state.boundary, position)
    start = state.boundary
    if start < state.clean <= boundary and view[state.clean - 1] is state.clean_last:
        start = state.clean  # looked at already, and still the same messages
    if not any(_clearable(message) for message in view[start:boundary]):
        # moving would change nothing sent, only the cache's prefix
        if boundary <= start:
            return sent, state
        # built directly: ``dataclasses.replace`` cost a turn more than the check itself
        return sent, ClearState(state.boundary, boundary, view[boundary - 1])
    return clearing(view, boundary), ClearState(boundary)


@dataclass(frozen=True)
class TrimState:
    boundary: int = 0
    """View positions from the end of the task up to this one are not sent (0: none)."""


def task_end(view: Sequence[Message]) -> int:
    """The position just after the task (the view's first user message); 0 if none."""
    return next((i + 1 for i, message in enumerate(view) if message["role"] == "user"), 0)


def _turn_start(view: Sequence[Message], position: int) -> bool:
    """A turn starts at every message that is not a tool result: a repaired view puts
    each call's result right after it, so a cut there never parts a call from it."""
    return 0 < position < len(view) and view[position]["role"] != "toolResult"


def _call_ids(messages: Sequence[Message]) -> set[str]:
    return {call["id"] for message in messages for call in tool_calls(message)}


def _can_cut(view: Sequence[Message], head: int, position: int) -> bool:
    """A turn start whose kept calls share no id with the dropped ones: a server that
    reuses ids (``call_0`` every turn) would otherwise leave a kept call answered only
    by a dropped result."""
    return _turn_start(view, position) and not (
        _call_ids(view[head:position]) & _call_ids(view[position:])
    )


def apply_trim(view: Sequence[Message], boundary: int) -> Sequence[Message]:
    """``view`` without the messages between the task and ``boundary``, and one note
    standing for them. A boundary that is not a turn start of this view (the view was
    replaced, say by a branch) trims nothing."""
    head = task_end(view)
    if boundary <= head or not _can_cut(view, head, boundary):
        return view if has_lineage(view) else list(view)
    dropped = view[head:boundary]
    turns = sum(1 for message in dropped if message["role"] == "assistant")
    note: Message = {
        "role": "user",
        "content": TRIM_NOTE.format(
            turns=turns, turn_word="turn" if turns == 1 else "turns", messages=len(dropped)
        ),
        "timestamp": dropped[-1]["timestamp"],
    }
    return [*view[:head], note, *view[boundary:]]


@dataclass(frozen=True)
class _Trimmed:
    view: Lineage
    boundary: int
    head: int
    stable: int
    note: Message
    sent: Lineage
    dropped: frozenset[str]
    """The ids of the calls left out (``_can_cut`` asks whether a kept call shares one)."""


class TrimMemo:
    """The last trim's note and lineage, so that views of one lineage trimmed at the
    same boundary keep one history (lineage.py): the same note object, then the same
    messages after it. What is sent is the same with or without it."""

    def __init__(self) -> None:
        self._last: _Trimmed | None = None

    def apply_trim(self, view: Sequence[Message], boundary: int) -> Sequence[Message]:
        """``apply_trim``. A view of the last one's lineage trimmed at the same boundary
        leaves out the same messages: their note and call ids are the last ones, so
        only the kept messages are looked at (what is left out grows with the run)."""
        last = self._last
        if not has_lineage(view):
            return apply_trim(view, boundary)
        head = task_end(view)
        stable = view.stable
        if (
            last is not None
            and last.view is view.lineage
            and (last.boundary, last.head) == (boundary, head)
            and boundary <= min(stable, last.stable)
        ):
            kept_ids = _call_ids(view[boundary:])
            if not _turn_start(view, boundary) or kept_ids & last.dropped:
                return view  # what ``apply_trim`` gives for a boundary it cannot cut at
            sent: list[Message] = [*view[:head], last.note, *view[boundary:]]
            lineage, dropped = last.sent, last.dropped
        else:
            trimmed = apply_trim(view, boundary)
            if trimmed is view:
                return view
            assert isinstance(trimmed, list)  # trimmed: a new list, the note in it
            sent, lineage = trimmed, Lineage()
            dropped = frozenset(_call_ids(view[head:boundary]))
        kept_places = head + 1 + stable - boundary if stable >= boundary else min(stable, head)
        self._last = _Trimmed(view.lineage, boundary, head, stable, sent[head], lineage, dropped)
        return LineageList(sent, lineage, kept_places)


def trim_old_turns(
    view: Sequence[Message],
    state: TrimState,
    *,
    tokens: Callable[[Sequence[Message]], int],
    limit: int,
    keep_tokens: int,
    size: Callable[[Message], int],
    tail_start: TailStart | None = None,
    memo: TrimMemo | None = None,
) -> tuple[Sequence[Message], TrimState]:
    """Trim as far as ``state`` says; if the request is still over ``limit``, move the
    boundary to the first turn start that leaves about ``keep_tokens`` of the newest
    messages (always at least the newest turn); ``tail_start`` as for clearing, ``memo``
    only saves work."""
    trimming = apply_trim if memo is None else memo.apply_trim
    sent = trimming(view, state.boundary)
    if tokens(sent) <= limit:
        return sent, state
    head = task_end(view)
    if tail_start is None:
        position = newest_within(view, keep_tokens, size, head)
    else:
        position = tail_start(view, keep_tokens, head)
    newest = next((i for i in range(len(view) - 1, head, -1) if _turn_start(view, i)), 0)
    held = state.boundary if _can_cut(view, head, state.boundary) else 0
    boundary = min(max(position, held), newest)
    while 0 < boundary < newest and not _can_cut(view, head, boundary):
        boundary += 1  # past a reply's results: the reply goes with them
    if boundary <= head or boundary == state.boundary or not _can_cut(view, head, boundary):
        return sent, state
    return trimming(view, boundary), TrimState(boundary)


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
