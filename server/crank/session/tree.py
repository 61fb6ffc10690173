"""The entries of one session held in memory, as a tree, and the walks over it.

Every entry names its parent, so the file is a tree; the tip is the last entry in the
file; a branch is the path from the root to one entry. ``load`` checks the whole file
against the rules a reader must refuse by name: duplicate ids, a missing ``parentId``
key (in ``entries.parse_entry``), a parent that is not in the file, a second root, and a
cycle, named where it is. ``add`` keeps the same rules for entries written live, so the
process and the file can never disagree.

``read`` may leave the history before the newest compaction's kept entry unread: when
that compaction recorded what the history had used (``usageBefore``), nothing the open
needs is in it (the model is shown what follows the kept entry; the totals are
recorded). It is read, and checked by the same rules, the first time anything asks for
the whole tree (``entries``, ``by_id``, ``path_to``, ``count``, a line number), which an
append does before minting an id: see ``complete``.
"""

from __future__ import annotations

import collections
import functools
import gc
import itertools
import operator
import os
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, NamedTuple

from . import jsonio, offsets
from .deferred import Zone, deferred_entries
from .entries import (
    COMPACTION_LINE_PREFIX,
    MESSAGE_LINE_PREFIX,
    Entry,
    EntryType,
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
_PARENT = operator.itemgetter("parentId")
_TYPE = operator.itemgetter("type")
_PARENTS = itertools.repeat("parentId")


class _Unread(NamedTuple):
    """The file's bytes from ``start`` (after the header) to ``end`` (where the newest
    compaction's kept entry's line begins), not read yet. The file is only ever
    appended to, under this process's lock, so they are still there when asked for."""

    start: int
    end: int


class _NotLazy(Exception):
    """What was read after the unread history is not what leaving it unread needs (a
    parent in the unread part other than the first's, a second root, a line to refuse):
    the file is read whole instead, which names any fault with its line."""


class SessionTree:
    """Header plus entries in file order, indexed by id. Never reorders or forgets."""

    def __init__(self, path: Path, header: Header) -> None:
        self.path = path
        self.header = header
        self._entries: list[Entry] = []
        """The entries read, in file order: all of them unless ``_unread``."""
        self._by_id: dict[str, Entry] = {}
        self._others: dict[str, int] = {}
        """How many entries of each kind other than ``message`` (most files: none)."""
        self._linear = True
        """Every entry's parent is the entry before it (no branch was ever made), so the
        path to the tip is the whole file: resume need not walk 50,000 parent links."""
        self._unread: _Unread | None = None
        """The history ``read`` left unread; None once every entry is held. While it is
        set, nothing changes the tree but ``complete``."""
        self._completing = threading.Lock()
        self._history_kinds: dict[tuple[EntryType, ...], list[Entry]] = {}
        """The entries of some kinds in the history left unread, as ``of_kinds`` found them."""
        self._history_forked: bool | None = None
        """What the newest compaction recorded about the history left unread (``forked``)."""
        self.covered: offsets.Covered | None = None
        """How much of the file ``read`` took from its offset index (``offsets.py``),
        and what those entries used: the file's writer extends the index from there."""

    @property
    def entries(self) -> list[Entry]:
        """Every entry in file order (any history left unread is read first)."""
        if self._unread is not None:
            self.complete()
        return self._entries

    @property
    def by_id(self) -> dict[str, Entry]:
        """Every entry by id (any history left unread is read first)."""
        if self._unread is not None:
            self.complete()
        return self._by_id

    @property
    def held(self) -> list[Entry]:
        """The entries read so far, in file order, without reading any more: while the
        history is unread, those from the newest compaction's kept entry on."""
        return self._entries

    @property
    def unread(self) -> bool:
        """Whether the history before the newest compaction's kept entry is unread."""
        return self._unread is not None

    @classmethod
    def load(cls, path: Path, data: bytes) -> SessionTree:
        """Check and index a whole file given as bytes (``repair`` has them in hand)."""
        lines = split_lines(path, data)
        tail_start = max(0, len(data) - LIVE_SEARCH)
        found = _deferred_zone_end(data[tail_start:], tail_start)
        end = found[0] if found is not None else 0
        header_end = len(lines[0]) + 1
        zone = deferred_entries(data[header_end:end]) if end > header_end else None
        if zone is not None:
            lines = [lines[0], *lines[1 + len(zone.entries) :]]
        return cls._from_lines(path, lines, zone)

    @classmethod
    def read(cls, path: Path, *, index: bool = False) -> SessionTree:
        """``load`` of the file at ``path``, read a line at a time: the file's bytes are
        never all held at once next to the entries parsed from them, so opening a long
        session needs about the memory of its entries. The lines before the newest
        compaction's kept entry are the exception: read together and decoded in one go,
        their bytes are what their deferred messages keep (``deferred.py``), about half
        of what the decoded messages would take. A torn last line is refused before any
        line is parsed, exactly as ``load`` refuses it.

        A file whose offset index describes it is read from the index (``offsets.py``:
        the messages left in the file). ``index``: the caller holds the file's lock and
        keeps its index; a missing or stale one is made from the lines this read would
        parse one by one, and the tree is that index's (a file read in one decode up to
        its newest compaction's kept entry, an older writer's, keeps that cheaper read
        and gets no index)."""
        with open(path, "rb") as file, _collector_paused():
            size = os.fstat(file.fileno()).st_size
            if size == 0 or os.pread(file.fileno(), 1, size - 1) != b"\n":
                return cls.load(path, file.read())  # refused by name in split_lines
            found = None
            for reach in (READ_BLOCK, LIVE_SEARCH):  # most live parts are in the last MiB
                tail_start = max(0, size - reach)
                tail = os.pread(file.fileno(), size - tail_start, tail_start)
                found = _deferred_zone_end(tail, tail_start)
                if found is not None or tail_start == 0:
                    break
            del tail
            header = file.readline()
            zone = None
            end, compaction = found if found is not None else (0, {})
            if end > len(header) and "usageBefore" in compaction:
                try:
                    return cls._read_after(path, file, header, end)
                except _NotLazy:
                    file.seek(len(header))
            # Only then the offset index: reading its rows costs more than leaving the
            # history unread (a compacted file opens without a look at either).
            indexed = offsets.read(path, size)
            if indexed is not None:
                file.seek(0)
                return cls._read_indexed(path, file, indexed)
            if end > len(header):
                zone = deferred_entries(file.read(end - len(header)))
                if zone is None:  # a line not as our writer spells it: all read at once
                    file.seek(len(header))
            if zone is None and index:  # every line is to be parsed: into the index, then
                parse_header(path, header[:-1])  # refused by name before anything is written
                file.seek(0)
                indexed = offsets.build(path, file, functools.partial(parse_entry, path))
                file.seek(0)
                return cls._read_indexed(path, file, indexed)
            lines = itertools.chain((header[:-1],), _complete_lines(path, file))
            return cls._from_lines(path, lines, zone)

    @classmethod
    def _read_indexed(cls, path: Path, file: IO[bytes], indexed: offsets.Indexed) -> SessionTree:
        """The tree of a file whose offset index describes its first lines: their
        entries as the index has them (messages left in the file, ``deferred.Stored``;
        the few lines another writer spelled otherwise parsed here), then every line
        past the index read as ``read`` reads lines. The index's rows were checked as
        entries when they were written; the links between them are checked again here,
        at C speed when every entry is the child of the one before."""
        header = file.readline()
        rows: list[Entry] = indexed.rows
        for number in offsets.rows_to_parse(rows):
            offset, length = offsets.line_of(rows[number])
            rows[number] = parse_entry(path, number + 2, os.pread(file.fileno(), length, offset))
        kinds = list(map(_TYPE, rows))
        others = {} if kinds.count("message") == len(kinds) else collections.Counter(kinds)
        others.pop("message", None)
        del kinds
        ids = list(map(_ID, rows))
        parents = list(map(_PARENT, rows))
        linear = bool(rows) and parents[0] is None and parents[1:] == ids[:-1]
        if linear:  # each parent the same string as the id before it: one string for both
            collections.deque(map(operator.setitem, rows[1:], _PARENTS, ids), maxlen=0)
        del ids, parents
        file.seek(indexed.covered.end)
        lines = itertools.chain((header[:-1],), _complete_lines(path, file))
        tree = cls._from_lines(path, lines, Zone(rows, linear, dict(others)))
        tree.covered = indexed.covered
        return tree

    @classmethod
    def _read_after(cls, path: Path, file: IO[bytes], header: bytes, end: int) -> SessionTree:
        """The tree of the file's lines from ``end`` on, the history before them left
        unread (``_unread``). Their lines are numbered as if they were the first: any
        fault raises ``_NotLazy``, and the whole read names it with its true line."""
        tree = cls(path, parse_header(path, header[:-1]))
        file.seek(end)
        read = map(
            functools.partial(parse_entry, path),
            itertools.count(2),
            _complete_lines(path, file),
            itertools.repeat(Shared()),
        )
        try:
            first = next(read)
            parent = first["parentId"]
            if parent is None:  # a second root: the whole read names it
                raise _NotLazy
            if not tree._index(itertools.chain((first,), read), 2, parent, check=False):
                raise _NotLazy
        except (SessionUnreadable, TornSession, StopIteration):
            raise _NotLazy from None
        tree._unread = _Unread(len(header), end)
        return tree

    def complete(self) -> None:
        """Read and check the history ``read`` left unread, if any, and hold every
        entry from then on: what the open read keeps its objects (a replayed message is
        the same one), the history goes before them. One decode, as an open that reads
        it does (``deferred.py``); a fault in it, or an id there that the entries read
        already use, raises ``SessionUnreadable`` naming its line, and the tree stays as
        it was. Once, whichever thread asks first; the others wait for it."""
        with self._completing:
            unread = self._unread
            if unread is None:
                return
            with open(self.path, "rb") as file, _collector_paused():
                data = os.pread(file.fileno(), unread.end - unread.start, unread.start)
                whole = SessionTree(self.path, self.header)
                zone = deferred_entries(data)
                if zone is not None and whole._index_linear(zone):
                    whole._index(iter(self._entries), 2 + len(zone.entries), zone.entries[-1]["id"])
                else:
                    history: Iterable[Entry] = (
                        zone.entries
                        if zone is not None
                        else map(
                            functools.partial(parse_entry, self.path),
                            itertools.count(2),
                            data.split(b"\n")[:-1],  # whole lines: ``end`` begins one
                            itertools.repeat(Shared()),
                        )
                    )
                    whole._index(itertools.chain(history, self._entries), 2, None)
                del data
            # ids first: a reader on another thread meanwhile finds every entry it is
            # given by id; the entries read stay the tail of the list either way
            self._by_id, self._others, self._linear = whole._by_id, whole._others, whole._linear
            self._entries = whole._entries
            self._unread = None

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
        self._by_id = by_id
        self._entries = entries  # taken, not copied: nobody else holds it
        self._others.update(zone.others)
        return True

    def _index(
        self, entries: Iterable[Entry], start: int, previous: str | None, *, check: bool = True
    ) -> bool:
        """Check and index ``entries``, which follow the entry ``previous`` (None: they
        are the first) and begin at line ``start``. Whether every parent came before its
        child; if not, with ``check``, the full checks name what is wrong."""
        by_id, held, others = self._by_id, self._entries, self._others
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
        if not in_order and check:
            # A parent after its child, a missing one, a second root or a cycle: the
            # full checks find which, and name it. A file in order can have none of them.
            self._check_links()
        return in_order

    def add(self, entry: Entry) -> None:
        """Index an entry about to be (or just) appended; its parent must already exist.
        Any history left unread is read first (its ids are taken too)."""
        entry_id, parent = entry["id"], entry["parentId"]
        by_id = self.by_id
        if entry_id in by_id:
            raise ValueError(f"entry id {entry_id} is already in {self.path}")
        if parent is None and self._entries:
            raise ValueError("only the first entry of a session may have no parent")
        if parent is not None and parent not in by_id:
            raise ValueError(f"parent {parent} is not an entry of {self.path}")
        self._linear = self._linear and parent == self.tip
        if (kind := entry["type"]) != "message":
            self._others[kind] = self._others.get(kind, 0) + 1
        self._entries.append(entry)
        by_id[entry_id] = entry

    def forked(self) -> bool | None:
        """Whether the session has more than one branch: some entry's parent is not the
        entry before it. Known from the entries held; while the history is unread, from
        what the newest compaction recorded about the entries before it
        (``forkedBefore``); None when that compaction recorded nothing (an older
        writer's): only reading the history would tell."""
        unread = self._unread  # first: ``complete`` sets ``_linear`` before it clears this
        if not self._linear:
            return True
        if unread is None:
            return False
        if self._history_forked is None:
            for entry in reversed(self._entries):  # what follows the kept entry: a few hundred
                if entry["type"] == "compaction":
                    recorded = entry.get("forkedBefore")
                    self._history_forked = recorded if isinstance(recorded, bool) else None
                    break
        return self._history_forked

    def of_kinds(self, kinds: tuple[EntryType, ...]) -> list[Entry]:
        """The entries of ``kinds`` (not ``message``) in file order. A history left unread
        stays so: its lines of those kinds are found by their first bytes (the writer
        spells each line's ``type`` first, and a newline inside a JSON string is always
        escaped, as ``index.py`` counts messages) and only they are parsed, with the
        checks of an open and their true line numbers; found once (the history never
        changes), then the entries held are looked through. A line another writer spelled
        otherwise is not found: only files Crank wrote leave a history unread."""
        with self._completing:  # both as one: ``complete`` replaces the list, then clears
            unread, held = self._unread, self._entries
        if unread is None:
            return [entry for entry in held if entry["type"] in kinds]
        found = self._history_kinds.get(kinds)
        if found is None:
            found = self._history_kinds[kinds] = self._history_of(unread, kinds)
        return found + [entry for entry in held if entry["type"] in kinds]

    def _history_of(self, unread: _Unread, kinds: tuple[EntryType, ...]) -> list[Entry]:
        with open(self.path, "rb") as file:
            # from the header's newline, which begins the history's first line
            data = os.pread(file.fileno(), unread.end - unread.start + 1, unread.start - 1)
        starts: list[int] = []
        for kind in kinds:
            spelled = b'\n{"type":' + jsonio.dumps_line(kind) + b","
            at = data.find(spelled)
            while at >= 0:
                starts.append(at + 1)
                at = data.find(spelled, at + 1)
        starts.sort()
        found: list[Entry] = []
        number, counted = 2, 1  # the history's first line is the file's second
        for start in starts:
            number += data.count(b"\n", counted, start)
            counted = start
            line = data[start : data.index(b"\n", start)]
            found.append(parse_entry(self.path, number, line))
        return found

    def count(self, kind: str) -> int:
        """How many entries of ``kind`` the file holds, without a pass over them."""
        if kind == "message":
            return len(self.entries) - sum(self._others.values())
        if self._unread is not None:
            self.complete()
        return self._others.get(kind, 0)

    def has(self, kind: str) -> bool:
        """Whether the file holds an entry of ``kind`` (any but ``message``): known from
        the entries read when one of them is (a history left unread is not read)."""
        return self._others.get(kind, 0) > 0 or self.count(kind) > 0

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
        return self._entries[-1]["id"] if self._entries else None

    def recent_path(self, entry_id: str) -> list[Entry] | None:
        """While the history is unread: the path to ``entry_id`` back through the entries
        read, oldest first, up to the first whose parent is unread (or the root). None
        once every entry is held (``path_to`` is then the whole path), or when the walk
        meets a loop (``path_to`` names it)."""
        if self._unread is None:
            return None
        entries = self._entries  # before ``_linear``: ``complete`` sets it first
        by_id = self._by_id
        if self._linear and entries and entry_id == entries[-1]["id"]:
            return list(entries)
        walked: list[Entry] = []
        current: Any = entry_id
        while (entry := by_id.get(current)) is not None:
            walked.append(entry)
            if len(walked) > len(by_id):
                return None
            current = entry["parentId"]
        walked.reverse()
        return walked

    def path_to(self, entry_id: str | None) -> list[Entry]:
        """The entries from the root down to ``entry_id`` (empty for ``None``)."""
        if self._unread is not None:
            self.complete()  # before ``_linear`` is asked: the history's branches count
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


def _deferred_zone_end(tail: bytes, tail_start: int) -> tuple[int, dict[str, Any]] | None:
    """Where, in the file whose last bytes from ``tail_start`` are ``tail``, the line of
    the newest compaction's kept entry begins, when both lines are in ``tail``, and that
    compaction as its line says: the lines before the kept entry are what the model is
    no longer shown. Only a guess of where deferring pays: every line is checked
    whatever it says, and replay finds the compaction itself."""
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
    return (tail_start + line + 1, record) if line >= 0 else None


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
