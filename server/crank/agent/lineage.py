"""What two message lists share, known instead of compared.

A long run asks, several times a turn, which leading messages the list in front of it
shares with the one it measured last (the request view's sizes, its images, its
clearing). Comparing the two costs the length of the transcript every time, which made
the last tenth of a 4,000-turn run twice as dear per turn as the first. So the lists
the request path builds carry where they come from:

- a ``Lineage`` names one history that only grows at its end (a Harness's record until
  it is replaced; a repaired view up to its clean point; a view cleared at one
  boundary). It is an identity and nothing more;
- a ``LineageList`` is a list of messages of one lineage whose first ``stable`` places
  hold that history's messages (the same objects). Two lists of the same lineage
  therefore share at least the shorter of their stable parts, with nothing looked at.

- a ``SharedView`` is the same promise without a copy: the first places of a list its
  owner only ever appends to (a repaired view's history), then a short tail of its own.
  Handing out a view costs what its tail holds, not the transcript's length.

``shared_prefix`` starts from that and compares only the rest (the few messages of the
newest turn), so the usual question costs the same at turn 4,000 as at turn 10. A list
that carries no lineage is compared as before: the answer is the same either way, only
its cost differs. A ``LineageList`` is never changed once handed out, except the
Harness's own record, which is only appended to (``stable`` is None: all of it) and
gets a new lineage whenever it is changed otherwise.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Self, SupportsIndex, TypeGuard, overload

from .messages import Message


class Lineage:
    """One append-only history of messages, by identity alone."""

    __slots__ = ()


class FrozenError(TypeError):
    """A frozen ``LineageList`` was asked to change: it may be shared by several readers
    and by the memos that trust its lineage."""


class LineageList(list[Message]):
    """A list of messages whose first ``stable`` places are its lineage's history.

    Frozen (``stable`` given), it refuses every change (``FrozenError``): it may be
    handed to several readers and kept by memos. Growing (``stable`` None, the Harness's
    record), it takes appends and, replaced in place, a new lineage from its owner."""

    __slots__ = ("_stable", "lineage")

    def __init__(
        self, messages: Iterable[Message], lineage: Lineage, stable: int | None = None
    ) -> None:
        super().__init__(messages)
        self.lineage = lineage
        self._stable = stable
        """None: every place, however long the list grows (a record only appended to)."""

    @classmethod
    def joined(
        cls, head: Iterable[Message], tail: Iterable[Message], lineage: Lineage, stable: int
    ) -> LineageList:
        """A frozen list of ``head`` then ``tail``, copied once."""
        joined = cls((), lineage)
        list.extend(joined, head)
        list.extend(joined, tail)
        joined._stable = stable
        return joined

    @property
    def stable(self) -> int:
        return len(self) if self._stable is None else min(self._stable, len(self))

    @property
    def is_frozen(self) -> bool:
        """Nobody can change it (a snapshot); a growing list may still be appended to."""
        return self._stable is not None

    def frozen(self) -> LineageList:
        """This list as it stands, safe to keep: itself unless it may still grow."""
        if self.is_frozen:
            return self
        return LineageList(self, self.lineage, len(self))

    def __reduce_ex__(
        self, protocol: SupportsIndex
    ) -> tuple[type[list[Message]], tuple[list[Message]]]:
        """Copied (``copy``, ``deepcopy``) or pickled, it becomes a plain list: a copy is
        the caller's to change, and a lineage means nothing outside this process."""
        return list, (list(self),)

    def _changing(self) -> None:
        if self.is_frozen:
            raise FrozenError("this message list is a shared snapshot: copy it to change it")

    def append(self, message: Message) -> None:
        self._changing()
        super().append(message)

    def extend(self, messages: Iterable[Message]) -> None:
        self._changing()
        super().extend(messages)

    def insert(self, index: SupportsIndex, message: Message) -> None:
        self._changing()
        super().insert(index, message)

    def pop(self, index: SupportsIndex = -1) -> Message:
        self._changing()
        return super().pop(index)

    def remove(self, message: Message) -> None:
        self._changing()
        super().remove(message)

    def clear(self) -> None:
        self._changing()
        super().clear()

    def sort(self, *args: Any, **kwargs: Any) -> None:
        self._changing()
        super().sort(*args, **kwargs)

    def reverse(self) -> None:
        self._changing()
        super().reverse()

    def __setitem__(self, index: Any, value: Any) -> None:
        self._changing()
        super().__setitem__(index, value)

    def __delitem__(self, index: Any) -> None:
        self._changing()
        super().__delitem__(index)

    def __iadd__(self, messages: Iterable[Message]) -> Self:  # type: ignore[override,misc]
        self._changing()
        return super().__iadd__(messages)

    def __imul__(self, count: SupportsIndex) -> Self:
        self._changing()
        return super().__imul__(count)


class SharedView(Sequence[Message]):
    """The first ``length`` messages of ``base``, then ``tail``: a read-only sequence
    that shares the storage of a list instead of copying it.

    ``base`` must only ever be appended to while any view of it lives (its first
    ``length`` places then never change), and ``tail`` never changes: the view is as
    fixed as a frozen ``LineageList``, and memos keep it the same way (``kept``). Its
    first ``stable`` places are ``lineage``'s history. It equals a list (or another
    view) holding the same messages; ``copied`` makes it a frozen ``LineageList``, list
    to list, for a caller that needs a list (a request's messages). Copied or pickled,
    it becomes a plain list, as a ``LineageList`` does."""

    __slots__ = ("_base", "_length", "_tail", "lineage", "stable")

    def __init__(
        self,
        base: list[Message],
        length: int,
        tail: Sequence[Message],
        lineage: Lineage,
        stable: int,
    ) -> None:
        if not 0 <= length <= len(base):
            raise ValueError(f"a view of {length} messages of a list of {len(base)}")
        self._base = base
        self._length = length
        self._tail = tuple(tail)
        self.lineage = lineage
        self.stable = min(stable, length + len(self._tail))

    def __len__(self) -> int:
        return self._length + len(self._tail)

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        length = self._length
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                return list(self)[index]
            if stop <= length:
                return self._base[start:stop]
            if start >= length:
                return list(self._tail[start - length : stop - length])
            return [*self._base[start:length], *self._tail[: stop - length]]
        if index < 0:
            index += len(self)
        if 0 <= index < length:
            return self._base[index]
        if length <= index < len(self):
            return self._tail[index - length]
        raise IndexError("view index out of range")

    def __iter__(self) -> Iterator[Message]:
        return itertools.chain(itertools.islice(self._base, self._length), self._tail)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SharedView | list):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to lists, which have none

    @property
    def is_frozen(self) -> bool:
        return True

    def frozen(self) -> SharedView:
        return self

    def copied(self) -> LineageList:
        """The same messages as a frozen ``LineageList`` of the same lineage: one copy,
        list to list (iterating the view instead costs several times as much)."""
        copy = LineageList((), self.lineage)
        list.extend(copy, self._base)
        list.__delitem__(copy, slice(self._length, None))
        list.extend(copy, self._tail)
        copy._stable = self.stable
        return copy

    def __reduce_ex__(
        self, protocol: SupportsIndex
    ) -> tuple[type[list[Message]], tuple[list[Message]]]:
        return list, (list(self),)

    def __repr__(self) -> str:
        return f"SharedView({list(self)!r})"


class LazyRecord(Sequence[Message], ABC):
    """A resumed record whose messages are still in their file: each is decoded when it
    is first read, so opening a session of 50,000 messages decodes the page a client
    shows, not the transcript. Read-only, and of one lineage, like a frozen
    ``LineageList`` (its first ``stable`` places, all of them, are that history).

    What reads the whole record (a run, a compaction) asks for ``read_all`` once, off
    the event loop, and keeps the list it gets, under the same lineage: the messages
    are the same objects the record hands out one at a time. ``sent_as_is`` answers,
    without decoding a message, whether the view would repair nothing (see
    ``view.sent_as_is``): the facts it needs were kept when each message was written."""

    lineage: Lineage

    @abstractmethod
    def read_all(self) -> list[Message]:
        """Every message, decoded now where not yet (blocking: call it from a worker
        thread); safe to call from two threads at once."""

    @abstractmethod
    def sent_as_is(self) -> bool:
        """Whether the record is already a valid view with nothing to leave out."""

    @property
    def stable(self) -> int:
        return len(self)

    @property
    def is_frozen(self) -> bool:
        return True

    def frozen(self) -> LazyRecord:
        return self

    def __reduce_ex__(
        self, protocol: SupportsIndex
    ) -> tuple[type[list[Message]], tuple[list[Message]]]:
        return list, (self.read_all(),)


def has_lineage(
    messages: Sequence[Message],
) -> TypeGuard[LineageList | SharedView | LazyRecord]:
    """``messages`` carries a lineage (a ``LineageList``, a ``SharedView`` or a
    ``LazyRecord``)."""
    return isinstance(messages, LineageList | SharedView | LazyRecord)


def kept(messages: Sequence[Message]) -> Sequence[Message]:
    """``messages`` as a memo may keep it to compare against later: a frozen list or a
    view of a lineage as it is (no copy), anything else copied (a caller may change its
    list)."""
    if has_lineage(messages):
        return messages.frozen()
    return list(messages)


def same_lineage(messages: Sequence[Message], before: Sequence[Message]) -> bool:
    """Both lists carry a lineage, and it is the same one."""
    return has_lineage(messages) and has_lineage(before) and messages.lineage is before.lineage


def known_shared(messages: Sequence[Message], before: Sequence[Message]) -> int:
    """How many leading messages the two lists are known to share without looking."""
    if has_lineage(messages) and has_lineage(before) and messages.lineage is before.lineage:
        return min(messages.stable, before.stable)
    return 0


def shared_prefix(messages: Sequence[Message], before: Sequence[Message]) -> int:
    """How many leading messages ``messages`` shares with ``before``.

    A message is never changed once it is in a record (what changes is rebuilt as a new
    object), so the memos that keep a long run's per-turn work flat (sizes, images,
    clearing) use this to find what is new since the previous request. What the two
    lists' lineage vouches for is not looked at; the rest is compared as lists, at C
    speed and identity first, and the first difference, if any, is found by bisection
    over slices. (A Python-level ``map(operator.is_)`` here cost a 4,000-turn run 23
    seconds.) Equal messages that are not the same object count as shared: what the
    memos keep for a message depends only on its content."""
    count = min(len(messages), len(before))
    low = known_shared(messages, before)
    if low >= count:
        return count
    head, old = messages[low:count], before[low:count]
    if type(head) is not type(old):  # a tuple never equals a list
        head, old = list(head), list(old)
    if head == old:
        return count
    high = len(head)  # head[:found] == old[:found]; head[:high] != old[:high]
    found = 0
    while high - found > 1:
        middle = (found + high) // 2
        if head[found:middle] == old[found:middle]:
            found = middle
        else:
            high = middle
    return low + found


__all__ = [
    "FrozenError",
    "LazyRecord",
    "Lineage",
    "LineageList",
    "SharedView",
    "has_lineage",
    "kept",
    "known_shared",
    "same_lineage",
    "shared_prefix",
]
