"""Non-recursive directory watches that cost nothing while nothing changes.

watchfiles' watch loop wakes every ``step`` milliseconds in a thread of its own to look
for changes, so every idle workspace folder cost 100 wake-ups a second and two threads,
all day. On Linux the prompt watcher reads inotify itself instead: one descriptor per
watch set, registered with the event loop (``add_reader``), so the process sleeps until
the kernel has an event for one of the few directories that feed the prompt. The only
timer is the short quiet period that batches a burst of events, and it runs only
while events arrive. Elsewhere (macOS) ``available()`` is false and the watcher keeps
watchfiles.

Paths are reported as the directory's path joined with the entry's name; a directory
that was itself deleted or moved (or whose watch the kernel dropped) is reported as its
own path, and an overflowed queue as every watched directory, so the owner rebuilds.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import os
import struct
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC

ENTRY_EVENTS = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO
ENTRY_EVENTS |= IN_CREATE | IN_DELETE
SELF_EVENTS = IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED
MASK = ENTRY_EVENTS | SELF_EVENTS | IN_ONLYDIR

HEADER = struct.Struct("iIII")
"""struct inotify_event: wd, mask, cookie, len; then ``len`` bytes of NUL-padded name."""

QUIET_S = 0.01
"""A burst of events is delivered once none came for this long (an editor's save is a
write, a rename and an attribute change within a few milliseconds)."""
LONGEST_BATCH_S = 0.1
"""...or once the burst has lasted this long, so a steady stream still gets through."""


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.inotify_init1  # noqa: B018  (present on every glibc and musl since 2008)
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _libc()


def available() -> bool:
    """Whether inotify can be used here (Linux)."""
    return _LIBC is not None


class DirWatch:
    """inotify watches on ``targets`` (directories, not recursive), read on the running
    event loop. ``next_batch`` waits for relevant events; ``close`` releases it all."""

    def __init__(self, targets: Sequence[Path], relevant: Callable[[Path], bool]) -> None:
        if _LIBC is None:
            raise OSError("inotify is not available on this platform")
        self._relevant = relevant
        fd = _LIBC.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            error = ctypes.get_errno()
            raise OSError(error, f"inotify_init1: {os.strerror(error)}")
        self._fd = fd
        self._dirs: dict[int, Path] = {}
        self._pending: set[Path] = set()
        self._ready = asyncio.Event()
        self._quiet: asyncio.TimerHandle | None = None
        self._burst_started: float | None = None
        self._loop = asyncio.get_running_loop()
        try:
            for target in targets:
                wd = _LIBC.inotify_add_watch(fd, os.fsencode(target), MASK)
                if wd < 0:
                    error = ctypes.get_errno()
                    raise OSError(error, f"watching {target}: {os.strerror(error)}")
                self._dirs[wd] = target
            self._loop.add_reader(fd, self._readable)
        except BaseException:
            os.close(fd)
            raise

    @property
    def watches(self) -> int:
        return len(self._dirs)

    def _readable(self) -> None:
        try:
            data = os.read(self._fd, 64 * 1024)
        except BlockingIOError:
            return
        except OSError:
            self._pending |= set(self._dirs.values())
            self._deliver()
            return
        found = False
        offset = 0
        while offset + HEADER.size <= len(data):
            wd, mask, _cookie, length = HEADER.unpack_from(data, offset)
            name = data[offset + HEADER.size : offset + HEADER.size + length].rstrip(b"\0")
            offset += HEADER.size + length
            if mask & IN_Q_OVERFLOW:
                self._pending |= set(self._dirs.values())
                found = True
                continue
            folder = self._dirs.get(wd)
            if folder is None:
                continue
            path = folder / os.fsdecode(name) if name else folder
            if mask & SELF_EVENTS or self._relevant(path):
                self._pending.add(path)
                found = True
        if found:
            self._settle()

    def _settle(self) -> None:
        """Deliver once the burst has been quiet for ``QUIET_S`` (or lasted long enough)."""
        now = self._loop.time()
        if self._burst_started is None:
            self._burst_started = now
        if self._quiet is not None:
            self._quiet.cancel()
        if now - self._burst_started >= LONGEST_BATCH_S:
            self._deliver()
        else:
            self._quiet = self._loop.call_later(QUIET_S, self._deliver)

    def _deliver(self) -> None:
        self._quiet = None
        self._burst_started = None
        if self._pending:
            self._ready.set()

    async def next_batch(self, wake: asyncio.Event) -> set[Path] | None:
        """The paths changed since the last batch, or None once ``wake`` is set."""
        waiting = asyncio.create_task(self._ready.wait())
        woken = asyncio.create_task(wake.wait())
        try:
            await asyncio.wait({waiting, woken}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiting.cancel()
            woken.cancel()
        if wake.is_set():
            return None
        batch, self._pending = self._pending, set()
        self._ready.clear()
        return batch

    def close(self) -> None:
        if self._fd < 0:
            return
        if self._quiet is not None:
            self._quiet.cancel()
        with contextlib.suppress(Exception):
            self._loop.remove_reader(self._fd)
        os.close(self._fd)  # releases every watch with it
        self._fd = -1
