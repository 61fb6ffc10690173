"""Refusals a workspace request can end in, each carrying its ``kind``, and the one
table of Crank's error codes.

The layers below (session, vendors) raise typed exceptions with a kind and know no
numbers. ``CODES`` maps every kind to the JSON-RPC code protocol.md fixes (extend,
never renumber); it lives here, in the API both frontends translate (``crank.lsp``
and ``crank.acp``), so neither copies it. The frontends send the message unchanged,
so every message names what was wrong and, where there is something to do, what to
do. The kinds this layer adds to those below are ``run_in_progress``,
``no_such_workspace``, ``unknown_command`` and ``no_such_image``. ``crank.lsp.errors`` draws the exception tree.
"""

from __future__ import annotations

from typing import Final, Literal

from crank.session.errors import (
    INVALID_PARAMS,
    NO_SUCH_SESSION,
    REFUSED_WHILE_RUNNING,
    SessionError,
    SessionErrorKind,
)
from crank.vendors.config import NO_PROVIDER, ConfigError, ConfigErrorKind

__all__ = [
    "CODES",
    "INVALID_PARAMS",
    "NO_PROVIDER",
    "NO_SUCH_IMAGE",
    "NO_SUCH_SESSION",
    "NO_SUCH_WORKSPACE",
    "REFUSED_WHILE_RUNNING",
    "RUN_IN_PROGRESS",
    "UNKNOWN_COMMAND",
    "CrankError",
    "ErrorKind",
    "code_of",
    "invalid_params",
    "kind_of",
]

ErrorKind = (
    SessionErrorKind
    | ConfigErrorKind
    | Literal["run_in_progress", "no_such_workspace", "unknown_command", "no_such_image"]
)
"""Every refusal kind a frontend can meet below it."""
RUN_IN_PROGRESS: Final = "run_in_progress"
NO_SUCH_WORKSPACE: Final = "no_such_workspace"
UNKNOWN_COMMAND: Final = "unknown_command"
"""A prompt starting with ``/name`` names no command (crank.workspace.commands)."""
NO_SUCH_IMAGE: Final = "no_such_image"
"""``crank/image`` names a hash the session cannot serve (crank.workspace.images)."""


class CrankError(Exception):
    """A refusal of a workspace request: ``kind`` says which, ``message`` says why."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.message = message


def invalid_params(field: str, problem: str) -> CrankError:
    """An ``invalid_params`` refusal naming the field, e.g.
    ``invalid params: text: must be a string``."""
    return CrankError(INVALID_PARAMS, f"invalid params: {field}: {problem}")


CODES: Final[dict[ErrorKind, int]] = {
    "run_in_progress": 1001,
    "no_such_session": 1002,
    "no_such_workspace": 1003,
    "no_provider": 1004,
    "session_unreadable": 1005,
    "refused_while_running": 1006,
    "session_locked": 1007,
    "unknown_command": 1008,
    "no_such_image": 1009,
    "invalid_params": -32602,
    "internal_error": -32603,
}
"""Every refusal kind to its wire code: the only place these numbers are written."""


def kind_of(exc: BaseException) -> ErrorKind | None:
    """The refusal kind of an exception, or None when it is not a refusal (a bug)."""
    if isinstance(exc, CrankError):
        return exc.kind
    if isinstance(exc, SessionError | ConfigError):
        return exc.kind
    return None


def code_of(exc: BaseException) -> int | None:
    """The wire code of a refusal, or None when the exception is not one."""
    kind = kind_of(exc)
    return None if kind is None else CODES[kind]
