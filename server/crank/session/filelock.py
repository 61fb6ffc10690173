"""The writer's lock on a session file: the one module that knows the platform.

On POSIX it is ``flock``, exclusive and non-blocking: advisory, so it keeps a second
Crank out of a live session while readers (a listing, ``crank sessions show``) go on
reading. Windows has no advisory lock of that kind (``msvcrt.locking`` is mandatory and
would shut readers out too), so there the lock is not taken and a second writer is not
kept out; Crank is supported on Windows only through WSL (see the README), and this
module exists so that the package still imports there.
"""

from __future__ import annotations

import sys

LOCKS_ON_THIS_PLATFORM = sys.platform != "win32"


def try_lock(fd: int) -> bool:
    """Take the exclusive lock on ``fd`` without waiting; False when another process
    holds it. Other failures (a file system without locks) raise ``OSError``."""
    if sys.platform == "win32":
        return True
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except PermissionError:  # EACCES: some systems' word for "held by another"
        return False
    return True
