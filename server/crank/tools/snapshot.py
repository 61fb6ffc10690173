"""What the workspace's files are, cheaply: the before and after of every tool call.

A run's changes are known by comparing the workspace before a tool call with the
workspace after it. ``Scanner`` lists the files a command may touch (the workspace's
files, ``.gitignore`` respected the way ``walk`` reads it, ``.git`` left out), stats
each one and, for a file whose stat (size, mtime, ctime, inode) differs from what it
saw last time, reads it, hashes it and hands its bytes to ``save`` (the session's
content store) so the before image survives whatever the command does. A file whose
stat is unchanged keeps the hash it had: after the first scan, a scan costs one
``lstat`` per file and a read only of what changed.

Bounded: a file over ``SAVE_LIMIT`` bytes is never read (its stat stands for its
content), a binary file is hashed but not saved, and an ignored folder (or
``node_modules``) is one entry, its own stat, never walked. Such entries can be seen
to change but cannot be put back: ``FileState.why`` says why, and ``restorable`` is
False. A symbolic link is stat'ed, never followed.

``changes`` compares two snapshots. It promises: every path whose state differs is
listed exactly once, as added, modified or deleted, in path order.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

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
    found: list[Change] = []
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if old is None and new is not None:
            found.append(Change(path, "added", None, new))
        elif new is None and old is not None:
            found.append(Change(path, "deleted", old, None))
        elif old is not None and new is not None and not old.same_content(new):
            found.append(Change(path, "modified", old, new))
    return found


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _stat_of(info: os.stat_result, *, folder: bool = False) -> FileState:
    return FileState(info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, folder=folder)


class Scanner:
    """Snapshots of one workspace, remembering the last state of every path so a file
    whose stat did not change is not read again. ``store`` must keep what it is given
    before the scan returns (it is the before image of the next command)."""

    def __init__(
        self, root: Path, store: Store, *, limit: int = SAVE_LIMIT, max_entries: int = MAX_ENTRIES
    ) -> None:
        self.root = root.resolve()
        self.store = store
        self.save: Save = store.put
        self.limit = limit
        self.max_entries = max_entries
        self._known: dict[str, FileState] = {}

    # -- the two scans -------------------------------------------------------------------

    def scan(self) -> Snapshot:
        """Every file of the workspace (see the module docstring for what is one entry);
        ``TooLarge`` past ``max_entries``."""
        found: Snapshot = {}
        with self.store.batch() as save:
            self.save = save
            try:
                self._walk(self.root, "", [], found)
            finally:
                self.save = self.store.put
        self._known = dict(found)
        return found

    def scan_paths(self, paths: Iterable[str]) -> Snapshot:
        """Only these workspace-relative paths (a tool that names the file it changes)."""
        found: Snapshot = {}
        for relative in paths:
            try:
                info = os.lstat(self.root / relative)
            except OSError:
                self._known.pop(relative, None)
                continue
            state = self._state(relative, info, layers=None)
            if state is not None:
                found[relative] = state
                self._known[relative] = state
        return found

    # -- one entry -------------------------------------------------------------------------

    def _walk(self, directory: Path, prefix: str, layers: list[Layer], found: Snapshot) -> None:
        layers = [*layers, ("", len(prefix), _rules(directory))]
        try:
            with os.scandir(directory) as scan:
                entries = list(scan)
        except OSError:
            return
        known = self._known
        if len(found) + len(entries) > self.max_entries:
            raise TooLarge(f"the workspace has more than {self.max_entries} files")
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
                    found[relative] = self._state(relative, info, layers)
                    continue
            except OSError:
                continue
            if entry.name in ALWAYS_SKIPPED and entry.name not in NOT_WALKED:
                continue
            path = directory / entry.name
            if entry.name in NOT_WALKED or ignored(relative, True, layers):
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                why = "an ignored folder (not recorded file by file)"
                found[relative + "/"] = FileState(
                    0, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, why=why, folder=True
                )
                continue
            self._walk(path, relative + "/", layers, found)

    def _state(self, relative: str, info: os.stat_result, layers: list[Layer] | None) -> FileState:
        plain = _stat_of(info)
        known = self._known.get(relative)
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
        data = _read(self.root / relative, self.limit)
        if data is None:
            return _with(plain, why="unreadable")
        if len(data) > self.limit:
            return _with(plain, why=f"larger than {self.limit} bytes")
        if b"\0" in data[:SNIFF_BYTES]:
            return _with(plain, sha=sha256_hex(data), why="a binary file")
        sha = self.save(data)
        return FileState(plain.size, plain.mtime_ns, plain.ctime_ns, plain.ino, sha, saved=True)


def _with(plain: FileState, *, sha: str | None = None, why: str) -> FileState:
    return FileState(plain.size, plain.mtime_ns, plain.ctime_ns, plain.ino, sha, False, why)


def _read(path: Path, limit: int) -> bytes | None:
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
