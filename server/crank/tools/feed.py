"""A change feed for the workspace snapshots: which paths changed since it was last read.

``Feed`` is one Linux inotify descriptor with a watch on every folder a scan walked
(``crank.tools.snapshot.Scanner`` adds them, each before it lists the folder, so what
changes after the listing is reported and what changed before it is listed). The
descriptor is never registered with the event loop and no thread reads it: the kernel
queues the events and ``drain`` reads them, non-blocking, when a snapshot is taken. At
idle Crank does nothing at all for it (no timer, no wake-up, no thread).

Why an event cannot arrive late: the kernel queues an inotify event inside the system
call that makes the change (a ``write``, ``rename``, ``unlink``, the last ``close``),
before that call returns. A command has made its changes before it exits, and its exit
is known before the snapshot after it is taken, so its events are in the queue by then
and one non-blocking read sees them all; no sentinel or settle time is needed.

What inotify does not report, and so where the full scan stays the truth: writes
through a shared memory mapping (no event until the file is written another way), a
file changed through a hard link whose other name is outside the workspace, and
changes made by another machine to a network file system. ``drain`` returns None when
the queue overflowed (``fs.inotify.max_queued_events``): the caller rescans everything.
``watch`` raises ``FeedLost`` when the kernel refuses a watch (too many:
``fs.inotify.max_user_watches``) and ``Feed()`` raises it when inotify is not there
(not Linux, or ``fs.inotify.max_user_instances`` reached): the caller scans instead.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

CHANGED = 0x0002  # IN_MODIFY
ATTRIB = 0x0004
CLOSE_WRITE = 0x0008
MOVED_FROM = 0x0040
MOVED_TO = 0x0080
CREATE = 0x0100
DELETE = 0x0200
DELETE_SELF = 0x0400
MOVE_SELF = 0x0800
UNMOUNT = 0x2000
OVERFLOW = 0x4000
GONE = 0x8000  # IN_IGNORED: the watch was removed (by us, or with its folder)
ONLYDIR = 0x01000000
DONT_FOLLOW = 0x02000000
ISDIR = 0x40000000

FOLDER_MASK = CHANGED | ATTRIB | CLOSE_WRITE | MOVED_FROM | MOVED_TO | CREATE | DELETE | DELETE_SELF
FOLDER_MASK |= MOVE_SELF | ONLYDIR | DONT_FOLLOW
"""Everything that can change an entry's stat, and the folder's own end."""

_EVENT = struct.Struct("iIII")
"""The head of a ``struct inotify_event`` (wd, mask, cookie, len), then the name."""
_READ_BYTES = 256 * 1024


class FeedLost(OSError):
    """inotify cannot be used (here, or any more): snapshots are full scans."""


@dataclass(frozen=True)
class Event:
    """One kernel event: the watch it came from, what happened, the entry's name
    (empty when it is about the watched folder itself)."""

    wd: int
    mask: int
    name: str


def _load() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        for name in ("inotify_init1", "inotify_add_watch", "inotify_rm_watch"):
            getattr(libc, name)
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _load()


def available() -> bool:
    """Whether this platform has inotify at all."""
    return _LIBC is not None


class Feed:
    """One inotify descriptor, read only by ``drain``. Not thread-safe: its owner
    serialises the calls (the scanner holds its lock)."""

    def __init__(self) -> None:
        if _LIBC is None:
            raise FeedLost("inotify is not available on this platform")
        self._libc = _LIBC
        fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            code = ctypes.get_errno()
            raise FeedLost(code, f"inotify_init1: {os.strerror(code)}")
        self._fd = fd
        self.watches = 0

    def watch(self, folder: Path) -> int:
        """A watch on ``folder`` (not recursive, not following a link); its number.
        Watching a folder already watched (it was moved) gives the same number back.
        ``FileNotFoundError``/``NotADirectoryError`` when it is gone by now."""
        wd = self._libc.inotify_add_watch(self._fd, os.fsencode(folder), FOLDER_MASK)
        if wd >= 0:
            self.watches += 1
            return int(wd)
        code = ctypes.get_errno()
        if code in (errno.ENOENT, errno.ENOTDIR, errno.EACCES):
            raise FileNotFoundError(code, os.strerror(code), str(folder))
        if code == errno.ENOSPC:
            raise FeedLost(
                code, "too many folders to watch (the fs.inotify.max_user_watches limit)"
            )
        raise FeedLost(code, f"watching {folder}: {os.strerror(code)}")

    def unwatch(self, wd: int) -> None:
        with contextlib.suppress(Exception):
            if self._libc.inotify_rm_watch(self._fd, wd) == 0:
                self.watches -= 1

    def drain(self) -> list[Event] | None:
        """Every event queued since the last call, in order; None when the kernel's
        queue overflowed and some were dropped."""
        events: list[Event] = []
        while True:
            try:
                data = os.read(self._fd, _READ_BYTES)
            except BlockingIOError:
                return events
            except OSError as exc:
                raise FeedLost(exc.errno, f"reading the change feed: {exc.strerror}") from exc
            offset = 0
            while offset + _EVENT.size <= len(data):
                wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
                start = offset + _EVENT.size
                offset = start + length
                if mask & OVERFLOW:
                    self._skip()
                    return None
                name = data[start:offset].rstrip(b"\0")
                events.append(Event(wd, mask, os.fsdecode(name)))

    def _skip(self) -> None:
        """Empty the queue after an overflow (the caller rescans everything)."""
        with contextlib.suppress(OSError):
            while os.read(self._fd, _READ_BYTES):
                pass

    def close(self) -> None:
        """Release the descriptor and every watch with it."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
            self.watches = 0
