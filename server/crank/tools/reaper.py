"""The first process of an unconfined command: a subreaper that ends what it started.

Without the sandbox's PID namespace, a command's process group is all an abort could
signal, and a child that called ``setsid`` (a daemon, ``setsid sleep 1000 &``) left
it and outlived the abort (25 of 50 runs). So an unconfined command runs as
``python -m crank.tools.reaper COMMAND...``: this process marks itself a child
subreaper (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``), so every descendant orphaned on
the way (a double fork, a ``setsid``) is re-parented to it rather than to init, and
runs the command as its child. When it gets SIGTERM or SIGHUP (the abort, the
timeout), it SIGKILLs every descendant it has, found by following
``/proc/<pid>/task/<tid>/children`` from itself, whatever session or group they moved
to, then exits. When the command ends by itself, it exits with the command's status
at once and leaves the rest as they are (a background job may go on, as before).
When Crank itself dies while the command runs (killed, crashed: no abort will come),
the kernel sends this process SIGTERM (``prctl(PR_SET_PDEATHSIG)``), and it ends
everything as for an abort, as a sandboxed command dies with bwrap's
``--die-with-parent``. Crank starts it from the event loop's thread, the one the
kernel watches, so only the process's end sends it.

Small on purpose: imports only the standard library, so it starts in a few tens of
milliseconds.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def become_subreaper() -> bool:
    """Mark this process a child subreaper; False where the system has none."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1)


def end_with_parent(parent: int) -> None:
    """SIGTERM when the parent dies; at once if it died before this was asked."""
    if _prctl(PR_SET_PDEATHSIG, signal.SIGTERM) and os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGTERM)


def children(pid: int) -> list[int]:
    """The direct children of ``pid`` (every thread's), as Linux lists them."""
    found: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return found
    for task in tasks:
        try:
            found += [int(word) for word in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return found


def descendants(pid: int) -> list[int]:
    seen: list[int] = []
    stack = children(pid)
    while stack:
        child = stack.pop()
        if child not in seen:
            seen.append(child)
            stack += children(child)
    return seen


def kill_all(pid: int) -> None:
    """SIGKILL every descendant of ``pid``, again until none is left (a process may
    fork while the first ones are being killed: its children come to us)."""
    for _ in range(50):
        found = descendants(pid)
        if not found:
            return
        for child in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
        for child in found:  # reap those that are ours, so /proc forgets them
            with contextlib.suppress(ChildProcessError):
                os.waitpid(child, os.WNOHANG)
        time.sleep(0.01)  # SIGKILL is not instant: let them die before looking again


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m crank.tools.reaper COMMAND [ARG...]", file=sys.stderr)
        return 2
    parent = os.getppid()
    become_subreaper()
    me = os.getpid()

    def end(signum: int, frame: FrameType | None) -> None:
        kill_all(me)
        signal.signal(signum, signal.SIG_DFL)  # end by the signal itself, as the shell would
        os.kill(me, signum)
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, end)
    signal.signal(signal.SIGHUP, end)
    end_with_parent(parent)
    try:
        child = subprocess.Popen(argv)
    except OSError as exc:
        print(f"crank reaper: cannot run {argv[0]}: {exc}", file=sys.stderr)
        return 127
    code = child.wait()
    if code < 0:  # killed by a signal: end the same way, so the caller sees the signal
        signal.signal(-code, signal.SIG_DFL)
        os.kill(me, -code)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
