"""Errors a session can raise, each carrying its protocol error code.

The frontends turn ``code`` and ``str(error)`` into a JSON-RPC error as they are; so
every message here names the file and the line or entry that is wrong, and says what
to do when there is something to do.
"""

from __future__ import annotations

from pathlib import Path

NO_SUCH_SESSION = 1002
SESSION_UNREADABLE = 1005
REFUSED_WHILE_RUNNING = 1006
SESSION_LOCKED = 1007
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


class SessionError(Exception):
    """Base class: ``code`` is the protocol error code for this failure."""

    code: int = SESSION_UNREADABLE


class SessionUnreadable(SessionError):
    """The file breaks the format; the message names the file and the line or entry."""

    code = SESSION_UNREADABLE

    def __init__(self, path: Path | str, where: str, problem: str) -> None:
        self.path = Path(path)
        self.where = where
        self.problem = problem
        super().__init__(f"session file {self.path} is unreadable at {where}: {problem}")


class TornSession(SessionUnreadable):
    """The last line was cut short by a crash; ``crank sessions repair FILE`` fixes it."""

    def __init__(self, path: Path | str, line: int, torn_bytes: int) -> None:
        self.line = line
        self.torn_bytes = torn_bytes
        super().__init__(
            path,
            f"line {line}",
            f"the last line is torn ({torn_bytes} bytes with no end of line; the process "
            f"writing it probably died). Nothing has been changed. Run "
            f"`crank sessions repair {Path(path)}` to move those bytes into a sidecar file "
            f"and make the session usable again",
        )


class SessionLocked(SessionError):
    """Another process holds the writer's lock; the session can still be read."""

    code = SESSION_LOCKED

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        super().__init__(
            f"session file {self.path} is being written by another process; "
            f"it can be read but not written until that process lets go"
        )


class NoSuchSession(SessionError):
    code = NO_SUCH_SESSION

    def __init__(self, session_id: str, where: Path | str) -> None:
        self.session_id = session_id
        super().__init__(f"no session {session_id!r} in {where}")


class AmbiguousSession(NoSuchSession):
    """A fragment of an id that fits several sessions; the message names them."""

    SHOWN = 5

    def __init__(self, fragment: str, candidates: list[str], where: Path | str) -> None:
        self.fragment = fragment
        self.candidates = candidates
        shown = ", ".join(candidates[: self.SHOWN])
        more = f" and {len(candidates) - self.SHOWN} more" if len(candidates) > self.SHOWN else ""
        SessionError.__init__(
            self,
            f"session id {fragment!r} is ambiguous in {where}: it fits {shown}{more}; "
            f"give more of the id",
        )
        self.session_id = fragment


class UnknownEntry(SessionError):
    """An entry id that the session does not hold; nothing was written."""

    code = INVALID_PARAMS

    def __init__(self, entry_id: str, path: Path | str) -> None:
        self.entry_id = entry_id
        super().__init__(
            f"entryId {entry_id!r} is not an entry of session {Path(path)}; nothing was written"
        )


class SessionBusy(SessionError):
    """The operation would rewrite the session's direction while a run is appending to it."""

    code = REFUSED_WHILE_RUNNING

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} is refused while a run is active; abort it or wait for it")


class SessionClosed(SessionError):
    """The log was closed, or an earlier write failed and left the file unsafe to extend."""

    code = SESSION_UNREADABLE


class SummaryFailed(SessionError):
    """The branch summary's model call failed; nothing was written."""

    code = INTERNAL_ERROR
