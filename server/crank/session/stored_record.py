"""A resumed transcript whose messages stay in the session file until they are read.

An open that took its entries from the offset index (``offsets.py``) has every message
still in the file (``deferred.Stored``). Replaying them into a list would decode all of
them, 50,000 of them for a long session, for a client that shows the newest few
hundred. ``StoredRecord`` is that transcript as a ``LazyRecord`` (``crank.agent``): a
message is decoded when it is first read, and kept in its entry (so it is the same
object every time, and the same one a later ``read_all`` gives); whether the view
would repair anything is answered from the facts each row kept (``sent_as_is``).
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import overload

from crank.agent.lineage import LazyRecord, Lineage
from crank.agent.messages import Message
from crank.agent.view import Shaped, sent_as_is, shape_of

from .deferred import Stored, message_of, messages_of
from .entries import Entry

_MESSAGE = operator.itemgetter("message")
_CHUNK = 1024
"""How many messages iterating decodes at a time (one open of the file each)."""


class StoredRecord(LazyRecord):
    """The messages of ``entries`` (message entries, in order) of the file ``path``."""

    __slots__ = ("_clean", "_entries", "_path", "lineage")

    def __init__(self, path: Path, entries: list[Entry], *, whole: bool = False) -> None:
        """``whole``: ``entries`` are every message entry of the file, in file order (a
        session never branched), so what the writer recorded with the newest of them
        (``Stored.clean``) is the verdict on all of them."""
        self._path = path
        self._entries = entries
        self.lineage = Lineage()
        last = entries[-1]["message"] if entries else None
        self._clean = whole and type(last) is Stored and last.clean

    def __len__(self) -> int:
        return len(self._entries)

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return messages_of(self._path, self._entries[index])
        return message_of(self._path, self._entries[index])

    def __iter__(self) -> Iterator[Message]:
        for start in range(0, len(self._entries), _CHUNK):
            yield from messages_of(self._path, self._entries[start : start + _CHUNK])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(self) == len(other) and all(map(operator.eq, self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to lists, which have none

    def read_all(self) -> list[Message]:
        return messages_of(self._path, self._entries)

    def sent_as_is(self) -> bool:
        if self._clean:
            return True
        held = list(map(_MESSAGE, self._entries))
        if set(map(type, held)) != {Stored}:  # some read since: their shapes are made
            held = list(map(self._shape, self._entries))
        return sent_as_is(held)

    def _shape(self, entry: Entry) -> Shaped:
        """What the view's repair looks at in an entry's message, decoded or not."""
        message = entry["message"]
        if type(message) is Stored:
            return message
        return shape_of(message_of(self._path, entry))

    def __repr__(self) -> str:
        return f"StoredRecord({len(self)} messages of {self._path.name})"


__all__ = ["StoredRecord"]
