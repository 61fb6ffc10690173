"""The first process of a command run in an editor's terminal: a group of its own.

An editor's terminal (ACP ``terminal/create``) starts the command as the client sees
fit: in a pty session of its own, in the client's own process group, through the
user's shell. Crank cannot see the process it got, so it could not signal the
command's group, and a client whose kill reaches only the process it started left
the command's children running. So the terminal runs ``python -I leader.py FILE
COMMAND...``, which:

1. makes itself the leader of a new session (``setsid``), unless it already leads a
   process group (a pty's session, a job-control shell's group): that group holds
   only what it starts, so it is the command's either way;
2. writes its pid, which is now the group's id, to ``FILE`` (written beside it, then
   renamed into place, so a reader never sees half of it). ``FILE`` is in a private
   folder Crank made for this one command; when it cannot be written (a client on
   another machine), the command still runs and Crank falls back to its sweep;
3. ``exec``s the command, so the pid (and the group) stay the same.

Standard library only, run by path with ``-I`` (``detached.leader_argv``), so it
starts in a few tens of milliseconds and imports nothing of Crank.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

RESTORED = ("SIGPIPE", "SIGXFSZ")
"""Signals Python ignores at startup; an ignored signal stays ignored across exec, and
``yes | head`` needs SIGPIPE to end ``yes``, so they are set back to their default."""


def lead() -> None:
    """Lead a session of our own, unless we already lead a group (setsid would fail)."""
    if os.getpgid(0) != os.getpid():
        with contextlib.suppress(OSError):
            os.setsid()


def tell(where: str) -> None:
    """Write our pid to ``where``, whole or not at all; silent when it cannot."""
    partial = f"{where}.new"
    try:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(str(os.getpid()))
        os.rename(partial, where)
    except OSError:
        return


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python -I leader.py FILE COMMAND [ARG...]", file=sys.stderr)
        return 2
    lead()
    tell(argv[0])
    for name in RESTORED:
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    try:
        os.execvp(argv[1], argv[1:])
    except OSError as exc:
        print(f"crank leader: cannot run {argv[1]}: {exc}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
