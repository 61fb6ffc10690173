"""The view: what a provider is sent, computed from the record.

The record keeps what happened, holes included (a crash between a call and its result,
an abort, a failed reply). Strict providers refuse a request in which a tool call has no
result or a result has no call, so before every request the record is *read* into a
valid view. ``build_view`` never changes the record, is idempotent, and gives the same
output for the same input.
"""

from __future__ import annotations

import itertools
import operator
from collections import deque
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, cast

from .lineage import Lineage, LineageList, SharedView
from .messages import (
    Message,
    ToolCallBlock,
    ToolResultMessage,
    is_empty_failure,
    tool_calls,
)

INTERRUPTED = "Interrupted: no result was recorded; it may or may not have run."


def _interrupted(call: ToolCallBlock, timestamp: int) -> ToolResultMessage:
    return {
        "role": "toolResult",
        "toolCallId": call["id"],
        "toolName": call["name"],
        "content": INTERRUPTED,
        "isError": True,
        "timestamp": timestamp,
    }


@dataclass(frozen=True)
class Repairs:
    """What ``repair_view`` changed on the way from the record to the view, so the log
    and the client can say so (a crash's hole shows up as ``interrupted``)."""

    interrupted: int = 0
    """Calls with no recorded result, given an honest "interrupted" result."""
    orphans: int = 0
    """Results left out because their call is not in the view."""
    duplicates: int = 0
    """Second (and later) results for a call that already has one."""
    empty_replies: int = 0
    """Failed or aborted replies with nothing in them, left out."""

    def __bool__(self) -> bool:
        return any((self.interrupted, self.orphans, self.duplicates, self.empty_replies))

    def to_json(self) -> dict[str, int]:
        return {
            "interruptedResults": self.interrupted,
            "droppedOrphanResults": self.orphans,
            "droppedDuplicateResults": self.duplicates,
            "droppedEmptyReplies": self.empty_replies,
        }


def repair_view(record: Sequence[Message]) -> tuple[list[Message], Repairs]:
    """Repair the record into a request every provider accepts, and say what changed.

    - A failed or aborted reply with nothing in it is left out.
    - Every tool call is followed at once by exactly one result, in call order. Calls are
      keyed by their place (message, index), not by id alone: a provider's id is unique
      only within one reply, and some reuse ``call_0`` every turn. Results, in record
      order, each go to the earliest call with their id that has none yet (a result
      recorded later is moved into place); a result left over is a duplicate (its id
      was answered: the first result is kept) or an orphan (no call has that id) and is
      dropped; a call with no result gets an honest "interrupted" one.
    - Ids go out unique: a call whose id an earlier call in the view already used is
      sent (with its result) under ``<id>_2`` (``_3``...), the first free one, so the
      same record always gives the same request. The record is never changed.
    Everything else keeps its relative order. Messages are shared, not copied, except
    those whose ids are renamed: callers must treat the view as read-only.
    """
    kept: list[tuple[Message, list[ToolCallBlock], int]] = []
    waiting: dict[str, int] = {}
    """Each call id's earliest call still without a result (calls numbered in order)."""
    later: dict[str, deque[int]] = {}
    """Its later calls, for an id used more than once (rare: no container per call)."""
    count = empty_replies = 0
    for message in record:
        if message["role"] == "toolResult":
            continue
        if is_empty_failure(message):
            empty_replies += 1
            continue
        calls = tool_calls(message)
        kept.append((message, calls, count))
        for call in calls:
            if call["id"] in waiting:
                later.setdefault(call["id"], deque()).append(count)
            else:
                waiting[call["id"]] = count
            count += 1
    all_ids = set(waiting)

    paired: dict[int, ToolResultMessage] = {}
    orphans = duplicates = 0
    for message in record:
        if message["role"] != "toolResult":
            continue
        call_id = message["toolCallId"]
        number = waiting.pop(call_id, None)
        if number is not None:
            paired[number] = message
            rest = later.get(call_id)
            if rest:
                waiting[call_id] = rest.popleft()
        elif call_id in all_ids:
            duplicates += 1
        else:
            orphans += 1

    view: list[Message] = []
    sent: set[str] = set()
    after: dict[str, int] = {}
    interrupted = 0
    for message, calls, first in kept:
        view.append(message)
        if not calls:
            continue
        renamed: dict[int, str] = {}
        for index, call in enumerate(calls):
            call_id = call["id"]
            if call_id in sent:
                call_id = _free_id(call_id, sent, all_ids, after)
                renamed[index] = call_id
            sent.add(call_id)
            result = paired.get(first + index)
            if result is None:
                interrupted += 1
                result = _interrupted(call, message["timestamp"])
            if result["toolCallId"] != call_id:
                result = cast(ToolResultMessage, {**result, "toolCallId": call_id})
            view.append(result)
        if renamed:
            view[-len(calls) - 1] = _with_ids(message, renamed)
    return view, Repairs(interrupted, orphans, duplicates, empty_replies)


def _free_id(call_id: str, sent: set[str], all_ids: Collection[str], after: dict[str, int]) -> str:
    """The first ``<id>_<n>`` (n from 2) neither sent nor in the record; ``after``
    remembers where each id's search stopped, so a record reusing one id a thousand
    times costs a thousand steps, not half a million."""
    number = after.get(call_id, 2)
    while f"{call_id}_{number}" in sent or f"{call_id}_{number}" in all_ids:
        number += 1
    after[call_id] = number + 1
    return f"{call_id}_{number}"


def _with_ids(message: Message, renamed: dict[int, str]) -> Message:
    """A copy of ``message`` whose ``index``-th tool calls carry the new ids."""
    content: list[Any] = []
    index = 0
    for block in message["content"]:
        if isinstance(block, dict) and block.get("type") == "toolCall":
            if index in renamed:
                block = cast(Any, {**block, "id": renamed[index]})
            index += 1
        content.append(block)
    return cast(Message, {**message, "content": content})


def build_view(record: Sequence[Message]) -> list[Message]:
    """The repaired view alone (``repair_view`` without the account of what changed)."""
    return repair_view(record)[0]


def is_valid_view(messages: Sequence[Message]) -> bool:
    """True iff every call is followed at once by exactly one result, in call order, and
    no result stands anywhere else. The property the tests check ``build_view`` against."""
    index = 0
    seen: set[str] = set()
    while index < len(messages):
        message = messages[index]
        index += 1
        if message["role"] == "toolResult":
            return False
        for call in tool_calls(message):
            if call["id"] in seen:
                continue
            seen.add(call["id"])
            if index >= len(messages):
                return False
            result = messages[index]
            if result["role"] != "toolResult" or result["toolCallId"] != call["id"]:
                return False
            index += 1
    return True


class GrowingView:
    """``repair_view`` for a record that grows at its end, in time proportional to what
    was added since the last clean point, with the same result as a full repair.

    A clean point is a length of the record up to which every call has its result and
    every result its call: the view of such a prefix is final, whatever comes after
    it, as long as no later call reuses one of its call ids (then, and whenever the
    record was replaced rather than extended, the whole record is repaired again).
    The views handed out carry a lineage: up to the clean point they are one history,
    which grows as the clean point moves and starts over when the whole record is
    repaired again, so what reads them next learns what they share without looking.
    ``shared`` hands out ``SharedView``s over that history's own list (no copy: a turn
    costs what it added, whatever the transcript's length); ``repair`` copies one into
    a frozen ``LineageList``. Tested against ``repair_view`` property-style
    (tests/agent/test_view.py)."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._clean = 0
        self._last: Message | None = None
        self._view: list[Message] = []
        """The final view of the record up to the clean point, only appended to (the
        views handed out share it): a reset starts a new list, never clears this one."""
        self._calls: set[str] = set()
        self._repairs = Repairs()
        self._lineage = Lineage()
        self._record_lineage: Lineage | None = None

    def repair(self, record: Sequence[Message]) -> tuple[LineageList, Repairs]:
        """``repair_view(record)`` as a frozen ``LineageList`` (a copy of ``shared``'s)."""
        view, repairs = self.shared(record)
        return view.copied(), repairs

    def shared(self, record: Sequence[Message]) -> tuple[SharedView, Repairs]:
        """``repair_view(record)``, as a view over the clean history's own list and the
        tail repaired past it: nothing before the clean point is copied."""
        start = self._clean
        lineage = record.lineage if isinstance(record, LineageList) else None
        if start and (
            len(record) < start
            or record[start - 1] is not self._last
            or (lineage is not None and lineage is not self._record_lineage)
        ):
            self._reset()
            start = 0
        tail = record[start:]
        tail_calls, reused = _calls_of(tail)
        if reused or tail_calls & self._calls:
            self._reset()
            start, tail = 0, record
            tail_calls, reused = _calls_of(tail)
        self._record_lineage = lineage
        if not reused and _sent_as_is(tail):
            tail_view, tail_repairs = list(tail), Repairs()  # what the repair would give
        else:
            tail_view, tail_repairs = repair_view(tail)
        late = (
            sum(1 for m in tail if m["role"] == "toolResult" and m["toolCallId"] in self._calls)
            if self._calls
            else 0
        )  # results for calls of the clean prefix: repaired alone they look orphaned
        repairs = Repairs(
            self._repairs.interrupted + tail_repairs.interrupted,
            self._repairs.orphans + tail_repairs.orphans - late,
            self._repairs.duplicates + tail_repairs.duplicates + late,
            self._repairs.empty_replies + tail_repairs.empty_replies,
        )
        clean = bool(tail) and not reused and _is_clean(tail, tail_calls, self._calls)
        if clean:
            self._clean, self._last = len(record), record[-1]
            self._view.extend(tail_view)  # only appended to: earlier views still hold
            self._repairs = repairs
            # A clean tail reuses no id, its own or the prefix's, so its view renamed
            # none: the ids it sends are its calls'.
            self._calls |= tail_calls
            final, tail_view = len(self._view), []
        else:
            final = len(self._view)  # empty unless there is a clean point (start > 0)
        return SharedView(self._view, final, tail_view, self._lineage, final), repairs


def _calls_of(messages: Sequence[Message]) -> tuple[set[str], bool]:
    """The ids of the calls a repair answers (an empty failure's calls are not sent),
    and whether two of them share an id (a provider that reuses them: then only a
    whole repair knows which ids the view renames). One pass: a resumed record is
    looked through whole."""
    ids = [
        call["id"]
        for message in messages
        if message["role"] == "assistant" and not is_empty_failure(message)
        for call in tool_calls(message)
    ]
    unique = set(ids)
    return unique, len(ids) != len(unique)


class Shaped(Protocol):
    """What the repair looks at in a message, and nothing else: its role, the ids of
    its tool calls in order (a reply's), the call it answers (a tool result's) and
    whether it is an empty failure. ``Shape`` is one; a message kept in its file keeps
    these too (``crank.session``), so a resumed record can be judged undecoded."""

    @property
    def role(self) -> str: ...
    @property
    def calls(self) -> tuple[str, ...]: ...
    @property
    def answers(self) -> str | None: ...
    @property
    def empty(self) -> bool: ...


class Shape(NamedTuple):
    role: str
    calls: tuple[str, ...] = ()
    answers: str | None = None
    empty: bool = False


def shape_of(message: Message) -> Shape:
    """The ``Shaped`` facts of one message."""
    if message["role"] == "toolResult":
        return Shape("toolResult", answers=message["toolCallId"])
    if message["role"] == "assistant":
        if is_empty_failure(message):
            return Shape("assistant", empty=True)
        return Shape("assistant", tuple(call["id"] for call in tool_calls(message)))
    return Shape(message["role"])


def sent_as_is(shapes: Iterable[Shaped]) -> bool:
    """Whether ``repair_view`` gives the record of these shapes back as it is: no empty
    failure to leave out, no call id used twice, and every call followed at once by
    its result, in call order, with no result anywhere else. A healthy record is, and
    this decides it instead of the repair's passes that build a new list: in passes at
    C speed, as a resumed record is looked through whole (50,000 messages: a loop over
    them took a third of the open)."""
    shapes = list(shapes)
    if any(map(_EMPTY, shapes)):
        return False
    calls = list(map(_CALLS, shapes))
    called = list(itertools.chain.from_iterable(calls))
    if len(set(called)) != len(called):
        return False
    results = [shape.role == "toolResult" for shape in shapes]
    if list(itertools.compress(map(_ANSWERS, shapes), results)) != called:
        return False  # results out of call order, or for no call
    # Where the results stand: after each other message, as many as it made calls.
    runs = bytes(results).split(b"\0")
    due = [len(made) for made, result in zip(calls, results, strict=True) if not result]
    return runs[0] == b"" and list(map(len, runs[1:])) == due


class AsIs:
    """``sent_as_is`` kept as a record grows: ``add`` each message's shape in order; it
    says whether the record so far is sent as is with no call left without its result.
    The same rule as ``sent_as_is`` (tested against it), for a writer that records the
    answer with each message (``crank.session.offsets``) so an open need not look.
    ``seen`` gives the call ids of the messages before the first added, when it starts
    from a record known to be sent as is; asked for only when a call comes."""

    def __init__(self, seen: Callable[[], Iterable[str]] | None = None) -> None:
        self._broken = False
        self._due: deque[str] = deque()
        self._seen: set[str] | None = None if seen is not None else set()
        self._history = seen

    @classmethod
    def broken(cls) -> AsIs:
        """A record not known to be sent as is: nothing it grows by makes it so."""
        verdict = cls()
        verdict._broken = True
        return verdict

    def add(self, shape: Shaped | None) -> bool:
        """Add a message's shape (None: one not known); the verdict so far."""
        if self._broken or shape is None or shape.empty:
            self._broken = True
            return False
        due = self._due
        if due:
            if shape.role != "toolResult" or shape.answers != due.popleft():
                self._broken = True
        elif shape.role == "toolResult":
            self._broken = True
        elif calls := shape.calls:
            seen = self._seen
            if seen is None:
                assert self._history is not None
                seen = self._seen = set(self._history())
            for call in calls:
                if call in seen:
                    self._broken = True
                seen.add(call)
            due.extend(calls)
        return not self._broken and not due


_EMPTY = operator.attrgetter("empty")
_CALLS = operator.attrgetter("calls")
_ANSWERS = operator.attrgetter("answers")


def _sent_as_is(messages: Sequence[Message]) -> bool:
    """``sent_as_is`` of ``messages``, the caller having ruled out reused ids: already a
    valid view, with no empty failure to leave out. Asked of the few messages a turn
    adds, several times a turn: two quick passes over the messages themselves (making
    their shapes first cost five times as much)."""
    return is_valid_view(messages) and not any(map(is_empty_failure, messages))


def _is_clean(messages: Sequence[Message], calls: set[str], earlier_calls: set[str]) -> bool:
    """Every call in ``messages`` (``calls``, theirs) has a result there, and every
    result there belongs to a call there (or is a late duplicate for an earlier,
    answered call). Reused ids are the caller's to rule out."""
    results = set()
    for message in messages:
        if message["role"] == "toolResult":
            call_id = message["toolCallId"]
            if call_id not in calls and call_id not in earlier_calls:
                return False
            results.add(call_id)
    return calls <= results
