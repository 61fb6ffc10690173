"""The entries of one session held in memory, as a tree, and the walks over it.

Every entry names its parent, so the file is a tree; the tip is the last entry in the
file; a branch is the path from the root to one entry. ``load`` checks the whole file
against the rules a reader must refuse by name: duplicate ids, a missing ``parentId``
key (in ``entries.parse_entry``), a parent that is not in the file, a second root, and a
cycle, named where it is. ``add`` keeps the same rules for entries written live, so the
process and the file can never disagree.
"""

from __future__ import annotations

import functools
import gc
import itertools
import operator
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from . import jsonio
from .deferred import Zone, deferred_entries
from .entries import (
    COMPACTION_LINE_PREFIX,
    MESSAGE_LINE_PREFIX,
    Entry,
    Header,
    Shared,
    parse_entry,
    parse_header,
    split_lines,
)
from .errors import SessionUnreadable, TornSession

READ_BLOCK = 1024 * 1024
"""How much of a session file ``read`` holds at once besides the entries (1 MiB: at 4 MiB
the peak of opening a 50 MB session was 4 MiB higher and no faster)."""

LIVE_SEARCH = 8 * READ_BLOCK
"""How far back from its end a file is searched for its newest compaction, whose kept
entry is where eager reading starts (``deferred.py``). What a model is sent after a
compaction fits its window, a few MiB at most; a compaction further back only means
more is decoded at once, as if there were none."""
_COMPACTION_LINE = b"\n" + COMPACTION_LINE_PREFIX
_ID = operator.itemgetter("id")


class SessionTree:
    """Header plus entries in file order, indexed by id. Never reorders or forgets."""

    def __init__(self, path: Path, header: Header) -> None:
        self.path = path
        self.header = header
        self.entries: list[Entry] = []
        self.by_id: dict[str, Entry] = {}
        self._others: dict[str, int] = {}
        """How many entries of each kind other than ``message`` (most files: none)."""
        self._linear = True
        """Every entry's parent is the entry before it (no branch was ever made), so the
        path to the tip is the whole file: resume need not walk 50,000 parent links."""

    @classmethod
    def load(cls, path: Path, data: bytes) -> SessionTree:
        """Check and index a whole file given as bytes (``repair`` has them in hand)."""
        lines = split_lines(path, data)
        tail_start = max(0, len(data) - LIVE_SEARCH)
        end = _deferred_zone_end(data[tail_start:], tail_start)
        header_end = len(lines[0]) + 1
        zone = deferred_entries(data[header_end:end]) if end and end > header_end else None
        if zone is not None:
            lines = [lines[0], *lines[1 + len(zone.entries) :]]
        return cls._from_lines(path, lines, zone)

    @classmethod
    def read(cls, path: Path) -> SessionTree:
        """``load`` of the file at ``path``, read a line at a time: the file's bytes are
        never all held at once next to the entries parsed from them, so opening a long
        session needs about the memory of its entries. The lines before the newest
        compaction's kept entry are the exception: read together and decoded in one go,
        their bytes are what their deferred messages keep (``deferred.py``), about half
        of what the decoded messages would take. A torn last line is refused before any
        line is parsed, exactly as ``load`` refuses it."""
        with open(path, "rb") as file, _collector_paused():
            size = os.fstat(file.fileno()).st_size
            if size == 0 or os.pread(file.fileno(), 1, size - 1) != b"\n":
                return cls.load(path, file.read())  # refused by name in split_lines
            end = None
            for reach in (READ_BLOCK, LIVE_SEARCH):  # most live parts are in the last MiB
                tail_start = max(0, size - reach)
                tail = os.pread(file.fileno(), size - tail_start, tail_start)
                end = _deferred_zone_end(tail, tail_start)
                if end is not None or tail_start == 0:
                    break
            del tail
            header = file.readline()
            zone = None
            if end is not None and end > len(header):
                zone = deferred_entries(file.read(end - len(header)))
                if zone is None:  # a line not as our writer spells it: all read at once
                    file.seek(len(header))
            lines = itertools.chain((header[:-1],), _complete_lines(path, file))
            return cls._from_lines(path, lines, zone)

    @classmethod
    def _from_lines(
        cls, path: Path, lines: Iterable[bytes | memoryview], zone: Zone | None
    ) -> SessionTree:
        """The tree of a file: its header line, the entries of its first lines already
        read with their messages deferred (``zone``, maybe none), then its other lines."""
        lines = iter(lines)
        tree = cls(path, parse_header(path, next(lines)))
        shared = Shared()
        deferred = zone.entries if zone is not None else []
        first = 2 + len(deferred)  # the line of the first entry read eagerly
        # map over a partial: the parse is called from C, with no Python frame between
        eager = map(
            functools.partial(parse_entry, path),
            itertools.count(first),
            lines,
            itertools.repeat(shared),
        )
        if zone is not None and tree._index_linear(zone):
            tree._index(eager, first, deferred[-1]["id"])
        else:
            tree._index(itertools.chain(deferred, eager) if deferred else eager, 2, None)
        return tree

    def _index_linear(self, zone: Zone) -> bool:
        """Index ``zone``, the file's first entries, at C speed (a Python loop over
        50,000 of them cost as much as decoding them) if each is the child of the one
        before (which the decode's loop saw), with no id twice: a session never
        branched, as most are. False, with nothing indexed, otherwise: ``_index`` then
        checks them one by one and names what is wrong. The tree keeps the zone's list
        itself as its list of entries."""
        if not zone.linear:
            return False
        entries = zone.entries
        by_id = dict(zip(map(_ID, entries), entries, strict=True))  # no list of ids
        if len(by_id) != len(entries):
            return False
        self.by_id = by_id
        self.entries = entries  # taken, not copied: nobody else holds it
        self._others.update(zone.others)
        return True

    def _index(self, entries: Iterable[Entry], start: int, previous: str | None) -> None:
        """Check and index ``entries``, which follow the entry ``previous`` (None: they
        are the first) and begin at line ``start``."""
        by_id, held, others = self.by_id, self.entries, self._others
        in_order = linear = True  # every parent seen before its child / just before it
        for number, entry in enumerate(entries, start=start):
            entry_id, parent = entry["id"], entry["parentId"]
            if entry_id in by_id:
                raise SessionUnreadable(
                    self.path,
                    f"line {number} (entry {entry_id})",
                    f"duplicate id: line {self.line(entry_id)} already has id {entry_id}",
                )
            if parent != previous:
                linear = False
                in_order = in_order and parent is not None and parent in by_id
            elif parent is not None:  # the same text as the id before: one string for both
                entry["parentId"] = previous
            if (kind := entry["type"]) != "message":
                others[kind] = others.get(kind, 0) + 1
            held.append(entry)
            by_id[entry_id] = entry
            previous = entry_id
        self._linear = linear
        if not in_order:
            # A parent after its child, a missing one, a second root or a cycle: the
            # full checks find which, and name it. A file in order can have none of them.
            self._check_links()

    def add(self, entry: Entry) -> None:
        """Index an entry about to be (or just) appended; its parent must already exist."""
        entry_id, parent = entry["id"], entry["parentId"]
        if entry_id in self.by_id:
            raise ValueError(f"entry id {entry_id} is already in {self.path}")
        if parent is None and self.entries:
            raise ValueError("only the first entry of a session may have no parent")
        if parent is not None and parent not in self.by_id:
            raise ValueError(f"parent {parent} is not an entry of {self.path}")
        self._linear = self._linear and parent == self.tip
        if (kind := entry["type"]) != "message":
            self._others[kind] = self._others.get(kind, 0) + 1
        self.entries.append(entry)
        self.by_id[entry_id] = entry

    def count(self, kind: str) -> int:
        """How many entries of ``kind`` the file holds, without a pass over them."""
        if kind == "message":
            return len(self.entries) - sum(self._others.values())
        return self._others.get(kind, 0)

    @property
    def line_of(self) -> dict[str, int]:
        """Each entry's line in the file. The file is the header, then one entry a
        line in ``entries``' order, so the line is the position: worked out when asked
        (only to name a fault), not kept, which cost 4 MiB of a 50,000-entry resume."""
        return {entry["id"]: number for number, entry in enumerate(self.entries, start=2)}

    def line(self, entry_id: str) -> int:
        """The line of one entry (a walk through ``entries``: for naming faults)."""
        entry = self.by_id[entry_id]
        return next(n for n, held in enumerate(self.entries, start=2) if held is entry)

    def where(self, entry_id: str) -> str:
        return f"line {self.line(entry_id)} (entry {entry_id})"

    def _check_links(self) -> None:
        for position, entry in enumerate(self.entries):
            parent = entry["parentId"]
            if parent is None:
                if position > 0:
                    raise SessionUnreadable(
                        self.path,
                        self.where(entry["id"]),
                        "parentId is null but it is not the first entry",
                    )
            elif parent not in self.by_id:
                raise SessionUnreadable(
                    self.path, self.where(entry["id"]), f"parent {parent} is not in the file"
                )
        self._check_cycles()

    def _check_cycles(self) -> None:
        """Refuse a cycle, naming its members starting from the first in file order."""
        settled: set[str] = set()
        for entry in self.entries:
            trail: list[str] = []
            on_trail: set[str] = set()
            current: str | None = entry["id"]
            while current is not None and current not in settled:
                if current in on_trail:
                    cycle = trail[trail.index(current) :]
                    first = min(cycle, key=self.line_of.__getitem__)  # lines, once
                    start = cycle.index(first)
                    ordered = cycle[start:] + cycle[:start]
                    chain = " -> ".join([*ordered, first])
                    raise SessionUnreadable(
                        self.path, self.where(first), f"parent links form a cycle: {chain}"
                    )
                trail.append(current)
                on_trail.add(current)
                current = self.by_id[current]["parentId"]
            settled.update(trail)

    @property
    def tip(self) -> str | None:
        return self.entries[-1]["id"] if self.entries else None

    def path_to(self, entry_id: str | None) -> list[Entry]:
        """The entries from the root down to ``entry_id`` (empty for ``None``)."""
        if self._linear and entry_id is not None and entry_id == self.tip:
            return list(self.entries)
        walked: list[Entry] = []
        seen: set[str] = set()
        current = entry_id
        while current is not None:
            if current in seen:
                raise SessionUnreadable(self.path, self.where(current), "parent links form a cycle")
            seen.add(current)
            entry = self.by_id.get(current)
            if entry is None:
                raise SessionUnreadable(
                    self.path, f"entry {current}", "the entry is not in the file"
                )
            walked.append(entry)
            current = entry["parentId"]
        walked.reverse()
        return walked

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)


def _complete_lines(path: Path, file: IO[bytes]) -> Iterator[bytes | memoryview]:
    """The lines of ``file`` without their newlines, read a few MiB at a time and handed
    out as views into that block (no copy per line; a line longer than a block is joined
    from its pieces). The file was checked to end in a newline; one that grew a partial
    line since (a writer mid-append) is torn there."""
    number = 0
    pieces: list[bytes] = []
    while block := file.read(READ_BLOCK):
        start = 0
        if pieces:
            end = block.find(b"\n")
            if end < 0:
                pieces.append(block)
                continue
            pieces.append(block[:end])
            number += 1
            yield b"".join(pieces)
            pieces = []
            start = end + 1
        view = memoryview(block)
        find = block.find
        while (end := find(b"\n", start)) >= 0:
            number += 1
            yield view[start:end]
            start = end + 1
        if start < len(block):
            pieces.append(block[start:])
    if pieces:
        raise TornSession(path, number + 1, sum(map(len, pieces)))


def _deferred_zone_end(tail: bytes, tail_start: int) -> int | None:
    """Where, in the file whose last bytes from ``tail_start`` are ``tail``, the line of
    the newest compaction's kept entry begins, when both lines are in ``tail``: the
    lines before it are what the model is no longer shown. Only a guess of where
    deferring pays: every line is checked whatever it says, and replay finds the
    compaction itself."""
    at = tail.rfind(_COMPACTION_LINE)
    end = tail.find(b"\n", at + 1)
    if at < 0 or end < 0:
        return None
    try:
        record = jsonio.loads(tail[at + 1 : end])
    except (ValueError, UnicodeDecodeError):
        return None  # the line is refused by name when its turn comes
    kept = record.get("firstKeptId") if isinstance(record, dict) else None
    if not isinstance(kept, str):
        return None
    spelled = b"\n" + MESSAGE_LINE_PREFIX + b'"id":' + jsonio.dumps_line(kept) + b","
    line = tail.rfind(spelled, 0, at)
    return tail_start + line + 1 if line >= 0 else None


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a file's entries are built.

    Parsing a long session allocates hundreds of thousands of dicts and lists that all
    stay alive; the collector, triggered by the allocation count, would walk them again
    and again for nothing (a third of the time of opening a 50 MB session). Reference
    counting still frees everything as usual; the collector is restored as it was, and
    runs on its own at the next threshold.

    What was built is then moved straight to the oldest generation (``freeze`` and
    ``unfreeze``: a list splice, no traversal). Left young, the next allocations of the
    process (replaying the transcript, say) paid for the collector walking all of it two
    or three times as it aged, which cost resuming 50,000 messages a third of its time."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        if was_enabled:
            gc.enable()
