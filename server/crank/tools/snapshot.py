"""What the workspace's files are, cheaply: the before and after of every tool call.

A run's changes are known by comparing the workspace before a tool call with the
workspace after it. ``Scanner`` lists the files a command may touch (the workspace's
files, ``.gitignore`` respected the way ``walk`` reads it, ``.git`` left out), stats
each one and, for a file whose stat (size, mtime, ctime, inode) differs from what it
saw last time, reads it, hashes it and hands its bytes to ``save`` (the session's
content store) so the before image survives whatever the command does. A file whose
stat is unchanged keeps the hash it had: after the first scan, a scan costs one
``lstat`` per file and a read only of what changed. With the change feed
(``crank.tools.feed``, Linux inotify) a snapshot after the first costs one ``lstat`` per
path the kernel reported changed instead (``Scanner.mark`` / ``since``), the walk
staying the fallback and the truth.

Bounded: a file over ``SAVE_LIMIT`` bytes is never read (its stat stands for its
content), a binary file is hashed but not saved, and an ignored folder (or
``node_modules``) is one entry, its own stat, never walked. Such entries can be seen
to change but cannot be put back: ``FileState.why`` says why, and ``restorable`` is
False. A symbolic link is stat'ed, never followed.

``changes`` compares two snapshots. It promises: every path whose state differs is
listed exactly once, as added, modified or deleted, in path order.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from . import feed
from .feed import Event, Feed, FeedLost
from .textfile import SNIFF_BYTES
from .walk import ALWAYS_SKIPPED, GITIGNORE_BYTES, Layer, Rule, ignored, parse_gitignore

SAVE_LIMIT = 1 << 20
"""Files up to this many bytes are hashed and saved; larger ones are watched by stat."""
MAX_ENTRIES = 300_000
"""A workspace with more entries than this is not snapshot for commands at all
(``TooLarge``): each command would cost seconds of ``lstat``s (bench/changes.py)."""
NOT_WALKED = frozenset({"node_modules"})
"""Folders seen as one entry (their own stat), never walked, like ignored folders."""

ChangeStatus = Literal["added", "modified", "deleted"]
"""What happened to one path between two snapshots (``crank/changes``'s ``status``)."""

Save = Callable[[bytes], str]
"""Keeps a file's bytes under their sha256 (the session's content store); the hash."""


class Store(Protocol):
    """Where before images go (``crank.session.fileblobs.FileStore``)."""

    def put(self, data: bytes) -> str: ...

    def batch(self) -> AbstractContextManager[Save]:
        """A ``put`` for many contents at once (a whole scan), kept when it ends."""
        ...


class TooLarge(Exception):
    """The workspace has more than ``Scanner.max_entries`` entries: no snapshot."""


@dataclass(frozen=True)
class FileState:
    """One path as a scan saw it. ``sha256`` is the content's hash when it was read;
    ``saved`` says its bytes are in the store; ``why`` says why they are not."""

    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int
    sha256: str | None = None
    saved: bool = False
    why: str | None = None
    folder: bool = False

    @property
    def key(self) -> tuple[int, int, int, int, bool]:
        """What a stat says of the path; equal keys are taken as equal content."""
        return (self.size, self.mtime_ns, self.ctime_ns, self.ino, self.folder)

    def same_stat(self, other: FileState) -> bool:
        return self.key == other.key

    def same_content(self, other: FileState) -> bool:
        """Equal content when both were hashed, else an equal stat."""
        if self.sha256 is not None and other.sha256 is not None:
            return self.sha256 == other.sha256 and self.folder == other.folder
        return self.same_stat(other)


Snapshot = dict[str, FileState]
"""Workspace-relative POSIX path (a folder's ends in ``/``) -> its state."""


@dataclass(frozen=True)
class Change:
    path: str
    status: ChangeStatus
    before: FileState | None
    after: FileState | None


def changes(before: Snapshot, after: Snapshot) -> list[Change]:
    found = (_change(path, before.get(path), after.get(path)) for path in sorted(before | after))
    return [change for change in found if change is not None]


def _change(path: str, old: FileState | None, new: FileState | None) -> Change | None:
    """What happened to ``path`` from ``old`` to ``new`` (None: nothing)."""
    if old is None:
        return None if new is None else Change(path, "added", None, new)
    if new is None:
        return Change(path, "deleted", old, None)
    return None if old.same_content(new) else Change(path, "modified", old, new)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _stat_of(info: os.stat_result, *, folder: bool = False) -> FileState:
    return FileState(info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, folder=folder)


@dataclass
class Counts:
    """What the scans of one scanner did (for tests and bench/changes.py): ``stats`` is
    how many entries were stat'ed, ``reads`` how many files were read and hashed,
    ``walks`` how many full walks of the workspace were made."""

    stats: int = 0
    reads: int = 0
    walks: int = 0


@dataclass
class _Folder:
    """A folder the scanner walked: its .gitignore layers (its own last), its watch
    (-1: none), its inode (a folder replaced by another is walked again)."""

    layers: list[Layer]
    wd: int
    ino: int


Journal = list[tuple[str, FileState | None, FileState | None]]


class Scanner:
    """Snapshots of one workspace, remembering the last state of every path so a file
    whose stat did not change is not read again. ``store`` must keep what it is given
    before the scan returns (it is the before image of the next command).

    A command is measured with ``mark`` before it and ``since`` after it. With the
    change feed (``crank.tools.feed``, on Linux) only the first of them walks the
    workspace; every later one re-stats only the paths the feed reported, plus the
    ignored folders seen as one entry (their own stat is not reported), so its cost
    follows what changed, not the workspace's size. Without the feed, or when it was
    lost (queue overflow, too many folders to watch), each is a full walk, as before.
    Both give the same answer: the feed only says where to look. The scanner never
    wakes by itself; ``close`` releases the feed."""

    def __init__(
        self,
        root: Path,
        store: Store,
        *,
        limit: int = SAVE_LIMIT,
        max_entries: int = MAX_ENTRIES,
        feed: bool = True,
    ) -> None:
        self.root = root.resolve()
        self._base = os.path.join(self.root, "")
        """The root as a string ending in a separator: paths joined by ``+``, not ``/``."""
        self.store = store
        self.save: Save = store.put
        self.limit = limit
        self.max_entries = max_entries
        self.counts = Counts()
        self.feed_problem: str | None = None
        """Why the change feed is not used (None while it is, or before the first scan)."""
        self._known: dict[str, FileState] = {}
        self._folders: dict[str, _Folder] = {}
        """Walked folders by prefix ("" for the root, else ``a/b/``)."""
        self._by_wd: dict[int, str] = {}
        self._opaque: set[str] = set()
        """The keys of folders seen as one entry (``build/``): re-stat'ed every time."""
        self._use_feed = feed
        self._feed: Feed | None = None
        self._walked = False
        self._journal: Journal = []
        self._journal_start = 0
        """The position of ``_journal[0]``: positions count every change ever journaled."""
        self._marks: dict[int, int] = {}
        self._lock = threading.Lock()
        self._closed = False

    # -- the public calls ------------------------------------------------------------------

    def scan(self) -> Snapshot:
        """Every file of the workspace (see the module docstring for what is one entry),
        from a full walk; ``TooLarge`` past ``max_entries``."""
        with self._held(), self._saving():
            self._walk_all()
            return dict(self._known)

    def mark(self) -> int:
        """Bring the state up to date and mark it: ``since`` gives what changed after.
        Every mark is given to ``since`` or ``release`` once."""
        with self._held(), self._saving():
            self._refresh()
            position = self._journal_start + len(self._journal)
            self._marks[position] = self._marks.get(position, 0) + 1
            return position

    def since(self, mark: int) -> list[Change]:
        """What changed between ``mark`` and now, as ``changes`` of the two full
        snapshots would say; the mark is used up."""
        with self._held():
            try:
                with self._saving():
                    self._refresh()
                return _net(self._journal[mark - self._journal_start :])
            finally:
                self._release(mark)

    def release(self, mark: int) -> None:
        """Forget a mark that will not be asked about (a call that never ran)."""
        with self._held():
            self._release(mark)

    def scan_paths(self, paths: Iterable[str]) -> Snapshot:
        """Only these workspace-relative paths (a tool that names the file it changes)."""
        found: Snapshot = {}
        with self._held():
            for relative in paths:
                self.counts.stats += 1
                try:
                    info = os.lstat(self.root / relative)
                except OSError:
                    self._put(relative, None)
                    continue
                state = self._state(relative, info, None, self._known)
                if state is not None:
                    found[relative] = state
                    self._put(relative, state)
        return found

    def close(self) -> None:
        """Release the change feed (the workspace closes). Never waits for a scan in
        progress (this is called on the event loop): that scan releases it as it ends.
        A scanner used after this walks the workspace every time."""
        self._closed = True
        if self._lock.acquire(blocking=False):
            try:
                self._drop_feed(None)
            finally:
                self._lock.release()

    @contextlib.contextmanager
    def _held(self) -> Iterator[None]:
        with self._lock:
            try:
                yield
            finally:
                if self._closed:
                    self._drop_feed(None)

    @contextlib.contextmanager
    def _saving(self) -> Iterator[None]:
        """What a scan reads is saved in one batch (one pack), opened at the first file
        to save and kept when the scan ends, even when it ends with an error (what it
        saved is named by the states it already keeps)."""
        stack = contextlib.ExitStack()
        batch: list[Save] = []

        def save(data: bytes) -> str:
            if not batch:
                batch.append(stack.enter_context(self.store.batch()))
            return batch[0](data)

        self.save = save
        try:
            yield
        finally:
            self.save = self.store.put
            stack.close()

    @property
    def watching(self) -> int:
        """How many folders the change feed watches (0: no feed)."""
        return self._feed.watches if self._feed is not None else 0

    # -- bringing the state up to date -----------------------------------------------------

    def _refresh(self) -> None:
        if self._feed is None or not self._walked:
            self._walk_all()
            return
        try:
            events = self._feed.drain()
        except FeedLost as exc:
            self._drop_feed(str(exc))
            events = None
        dirty = None if events is None else self._dirty(events)
        if dirty is None:
            self._walk_all()  # overflowed, or the root itself changed: start again
            return
        done: set[str] = set()
        for path in sorted(dirty):
            if any(above in done for above in _prefixes(path)):
                continue  # a tree above it was walked again already
            if self._refresh_path(path, dirty[path]):
                done.add(path + "/")
        for key in sorted(self._opaque):
            if key in self._known:
                self._refresh_path(key[:-1], False)
        if self._feed is None:  # lost on the way (too many folders): the walk is the truth
            self._walk_all()
        elif len(self._known) > self.max_entries:
            raise TooLarge(f"the workspace has more than {self.max_entries} files")

    def _dirty(self, events: list[Event]) -> dict[str, bool] | None:
        """The paths to look at again, each with whether its whole tree is (a folder
        created, moved or deleted, a .gitignore changed); None: walk everything."""
        dirty: dict[str, bool] = {}
        for event in events:
            prefix = self._by_wd.get(event.wd)
            if prefix is None:
                continue  # a watch already taken down
            if event.mask & feed.UNMOUNT:
                return None
            if not event.name:  # the watched folder itself
                if event.mask & (feed.DELETE_SELF | feed.MOVE_SELF | feed.GONE):
                    if prefix == "":
                        return None
                    dirty[prefix[:-1]] = True
                    if event.mask & feed.GONE:
                        del self._by_wd[event.wd]
                        if prefix in self._folders:
                            self._folders[prefix].wd = -1
                continue
            if event.name == ".gitignore":
                if prefix == "":
                    return None
                dirty[prefix[:-1]] = True
            tree = bool(event.mask & feed.ISDIR) and bool(
                event.mask & (feed.CREATE | feed.MOVED_TO | feed.MOVED_FROM | feed.DELETE)
            )
            path = prefix + event.name
            dirty[path] = dirty.get(path, False) or tree
        return dirty

    def _refresh_path(self, path: str, tree: bool) -> bool:
        """Look at ``path`` again (and under it when it is or was a walked folder and
        ``tree``, or it is now another folder); True when its tree was looked at."""
        parent, _, name = path.rpartition("/")
        folder = self._folders.get(parent + "/" if parent else "")
        if folder is None:
            return False  # under a folder not walked (ignored, or gone): its own entry says
        self.counts.stats += 1
        try:
            info: os.stat_result | None = os.lstat(self._base + path)
        except OSError:
            info = None
        layers = folder.layers
        kind = _kind(name, path, info, layers)
        walked = self._folders.get(path + "/")
        if kind == "walked" and walked is not None and not tree:
            assert info is not None
            if walked.ino == info.st_ino:
                return False  # the folder's entries report themselves
        old: Snapshot = {key: self._known[key] for key in (path, path + "/") if key in self._known}
        if walked is not None:
            old.update(self._forget_tree(path + "/"))
        new: Snapshot = {}
        if info is not None and kind == "walked":
            self._walk(self.root / path, path + "/", layers, new, old, info.st_ino)
        elif info is not None and kind == "opaque":
            new[path + "/"] = _opaque_state(info, old.get(path + "/"))
        elif info is not None and kind == "entry":
            new[path] = self._state(path, info, layers, old)
        for key in old.keys() - new.keys():
            self._put(key, None)
        for key, state in new.items():
            self._put(key, state)
        return walked is not None or kind == "walked"

    def _forget_tree(self, prefix: str) -> Snapshot:
        """Drop a walked folder and everything under it; what was known there."""
        for key in [key for key in self._folders if key.startswith(prefix)]:
            gone = self._folders.pop(key)
            if gone.wd >= 0 and self._by_wd.get(gone.wd) == key:
                del self._by_wd[gone.wd]
                if self._feed is not None:
                    self._feed.unwatch(gone.wd)
        return {key: state for key, state in self._known.items() if key.startswith(prefix)}

    def _put(self, key: str, state: FileState | None) -> None:
        """The one place the known state changes (journaled while a mark is open)."""
        old = self._known.get(key)
        if old is state:
            return
        if self._marks:
            self._journal.append((key, old, state))
        if state is None:
            del self._known[key]
            self._opaque.discard(key)
        else:
            self._known[key] = state
            if key.endswith("/"):
                self._opaque.add(key)

    def _release(self, mark: int) -> None:
        left = self._marks.get(mark, 0) - 1
        if left > 0:
            self._marks[mark] = left
        else:
            self._marks.pop(mark, None)
        oldest = min(self._marks, default=self._journal_start + len(self._journal))
        if oldest > self._journal_start:
            del self._journal[: oldest - self._journal_start]
            self._journal_start = oldest

    # -- the full walk ---------------------------------------------------------------------

    def _walk_all(self) -> None:
        if self._use_feed and self.feed_problem is None and not self._closed:
            self._drop_feed(None)
            try:
                self._feed = Feed()
            except FeedLost as exc:
                self.feed_problem = str(exc)
        self._folders = {}
        self._by_wd = {}
        self._walked = False
        found: Snapshot = {}
        self.counts.walks += 1
        try:
            self.counts.stats += 1
            try:
                ino = os.stat(self.root).st_ino
            except OSError:
                ino = -1  # the workspace is gone: the walk finds nothing, as it should
            self._walk(self.root, "", [], found, self._known, ino)
        except BaseException:
            self._drop_feed(None)
            raise
        for key in self._known.keys() - found.keys():
            self._put(key, None)
        for key, state in found.items():
            self._put(key, state)
        self._walked = "" in self._folders  # else the root is not there (to watch): walk again

    def _drop_feed(self, problem: str | None) -> None:
        if self._feed is not None:
            self._feed.close()
            self._feed = None
        if problem is not None:
            self.feed_problem = problem
        for folder in self._folders.values():
            folder.wd = -1
        self._by_wd = {}

    def _watch(self, directory: Path, prefix: str) -> int:
        """A watch on a folder about to be listed (-1: none); raises OSError when the
        folder is gone."""
        if self._feed is None:
            return -1
        try:
            wd = self._feed.watch(directory)
        except FeedLost as exc:
            self._drop_feed(str(exc))
            return -1
        moved_from = self._by_wd.get(wd)
        if moved_from is not None and moved_from != prefix and moved_from in self._folders:
            self._folders[moved_from].wd = -1  # the same folder, moved: the watch is here now
        self._by_wd[wd] = prefix
        return wd

    def _walk(
        self,
        directory: Path,
        prefix: str,
        layers: list[Layer],
        found: Snapshot,
        seen_before: Snapshot,
        ino: int,
    ) -> None:
        layers = [*layers, ("", len(prefix), _rules(directory))]
        try:
            wd = self._watch(directory, prefix)  # before the listing: no change falls between
            with os.scandir(directory) as scan:
                entries = list(scan)
        except OSError:
            return
        self._folders[prefix] = _Folder(layers, wd, ino)
        if len(found) + len(entries) > self.max_entries:
            raise TooLarge(f"the workspace has more than {self.max_entries} files")
        known = seen_before
        self.counts.stats += len(entries)
        for entry in entries:
            relative = prefix + entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                if not is_dir:  # the hot path: one lstat, one look-up
                    info = entry.stat(follow_symlinks=False)
                    seen = known.get(relative)
                    if seen is not None and seen.key == (
                        info.st_size,
                        info.st_mtime_ns,
                        info.st_ctime_ns,
                        info.st_ino,
                        False,
                    ):
                        found[relative] = seen
                        continue
                    found[relative] = self._state(relative, info, layers, known)
                    continue
            except OSError:
                continue
            if entry.name in ALWAYS_SKIPPED and entry.name not in NOT_WALKED:
                continue
            if entry.name in NOT_WALKED or ignored(relative, True, layers):
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                found[relative + "/"] = _opaque_state(info, known.get(relative + "/"))
                continue
            self._walk(directory / entry.name, relative + "/", layers, found, known, entry.inode())

    def _state(
        self,
        relative: str,
        info: os.stat_result,
        layers: list[Layer] | None,
        seen_before: Snapshot,
    ) -> FileState:
        plain = _stat_of(info)
        known = seen_before.get(relative)
        if known is not None and known.same_stat(plain):
            return known
        if stat.S_ISDIR(info.st_mode):
            return FileState(
                0, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, why="a folder", folder=True
            )
        if stat.S_ISLNK(info.st_mode):
            try:
                target = os.readlink(self.root / relative)
            except OSError:
                return _with(plain, why="a symbolic link that cannot be read")
            return _with(plain, sha=sha256_hex(os.fsencode(target)), why="a symbolic link")
        if not stat.S_ISREG(info.st_mode):
            return _with(plain, why="not a regular file")
        if layers is not None and ignored(relative, False, layers):
            return _with(plain, why="ignored (.gitignore)")
        if info.st_size > self.limit:
            return _with(plain, why=f"larger than {self.limit} bytes")
        self.counts.reads += 1
        data = _read(self._base + relative, self.limit)
        if data is None:
            return _with(plain, why="unreadable")
        if len(data) > self.limit:
            return _with(plain, why=f"larger than {self.limit} bytes")
        if b"\0" in data[:SNIFF_BYTES]:
            return _with(plain, sha=sha256_hex(data), why="a binary file")
        sha = self.save(data)
        return FileState(plain.size, plain.mtime_ns, plain.ctime_ns, plain.ino, sha, saved=True)


EntryKind = Literal["walked", "opaque", "entry", "skipped"]
"""What a scan makes of a path: a folder it walks, a folder seen as one entry, a file
(or link, or other entry) of its own, or nothing (``.git``)."""


def _kind(name: str, relative: str, info: os.stat_result | None, layers: list[Layer]) -> EntryKind:
    if info is None or not stat.S_ISDIR(info.st_mode):
        return "entry"
    if name in ALWAYS_SKIPPED and name not in NOT_WALKED:
        return "skipped"
    if name in NOT_WALKED or ignored(relative, True, layers):
        return "opaque"
    return "walked"


def _opaque_state(info: os.stat_result, seen: FileState | None) -> FileState:
    """A folder seen as one entry; ``seen`` again when its stat is the same."""
    why = "an ignored folder (not recorded file by file)"
    state = FileState(0, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, why=why, folder=True)
    return seen if seen is not None and seen.same_stat(state) else state


def _prefixes(path: str) -> list[str]:
    """The folder prefixes above ``path`` (``a/``, ``a/b/`` for ``a/b/c``)."""
    parts = path.split("/")[:-1]
    return ["/".join(parts[: index + 1]) + "/" for index in range(len(parts))]


def _net(journal: Journal) -> list[Change]:
    """The changes a journal adds up to: per path, its first state against its last."""
    first: dict[str, FileState | None] = {}
    last: dict[str, FileState | None] = {}
    for path, old, new in journal:
        first.setdefault(path, old)
        last[path] = new
    found = (_change(path, first[path], last[path]) for path in sorted(first))
    return [change for change in found if change is not None]


def _with(plain: FileState, *, sha: str | None = None, why: str) -> FileState:
    return FileState(plain.size, plain.mtime_ns, plain.ctime_ns, plain.ino, sha, False, why)


def _read(path: str, limit: int) -> bytes | None:
    """The file's bytes (no more than ``limit`` + 1), never following a link nor
    blocking on a FIFO put in its place; None when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _rules(directory: Path) -> list[Rule]:
    try:
        fd = os.open(directory / ".gitignore", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return []
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return []
        data = os.read(fd, GITIGNORE_BYTES)
    except OSError:
        return []
    finally:
        os.close(fd)
    if b"\0" in data:
        return []
    return parse_gitignore(data.decode("utf-8", "replace"))
