"""Refusals a workspace request can end in, a class each with its ``CODE``, and one
table of codes per protocol.

The layers below (session, vendors) raise typed exceptions with a ``kind`` and know
no numbers. This layer's own refusals are classes carrying ``kind`` and ``CODE``
(Crank's number, the one docs/protocol.md fixes: extend, never renumber), so a
caller can catch one refusal by type. ``LSP_CODES`` and ``ACP_CODES`` map every
refusal kind to that protocol's number: they differ where ACP gives a meaning of its
own to a number (its -32002 is "resource not found", which is what an unknown session
is there, while LSP's -32002 is "server not initialized"). The frontends send the
message unchanged, so every message names what was wrong and, where there is
something to do, what to do. Every refusal a frontend can meet, and its codes::

    Exception                                   kind                    LSP    ACP
    ├── CrankError                              (the classes below)
    │   ├── RunInProgress                       run_in_progress        1001   1001
    │   ├── NotActiveSession                    no_such_session        1002 -32002
    │   ├── NoSuchWorkspace                     no_such_workspace      1003   1003
    │   ├── NoProvider                          no_provider            1004   1004
    │   ├── RefusedWhileRunning                 refused_while_running  1006   1006
    │   ├── UnknownCommand                      unknown_command        1008   1008
    │   ├── NoSuchImage                         no_such_image          1009 -32002
    │   ├── InvalidParams                       invalid_params       -32602 -32602
    │   └── NotInitialized                      not_initialized      -32002 -32600
    ├── crank.vendors.ConfigError               no_provider            1004   1004
    └── crank.session.SessionError              (by class)
        ├── SessionUnreadable                   session_unreadable     1005   1005
        │   └── TornSession                     session_unreadable     1005   1005
        ├── SessionLocked                       session_locked         1007   1007
        ├── NoSuchSession                       no_such_session        1002 -32002
        │   └── AmbiguousSession                no_such_session        1002 -32002
        ├── UnknownEntry                        invalid_params       -32602 -32602
        ├── SessionBusy                         refused_while_running  1006   1006
        ├── SessionClosed                       session_unreadable     1005   1005
        └── SummaryFailed                       internal_error       -32603 -32603

(A test reads this drawing and compares it with the classes and the tables.) Clients
of ``crank serve`` read Crank's codes by name from ``initialize``'s
``capabilities.experimental.crank.errorCodes`` instead of copying the numbers.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final, Literal

from crank.session.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    NO_SUCH_SESSION,
    REFUSED_WHILE_RUNNING,
    SessionError,
    SessionErrorKind,
)
from crank.vendors.config import NO_PROVIDER, ConfigError, ConfigErrorKind

__all__ = [
    "ACP_CODES",
    "CODES",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "LSP_CODES",
    "NOT_INITIALIZED",
    "NO_PROVIDER",
    "NO_SUCH_IMAGE",
    "NO_SUCH_SESSION",
    "NO_SUCH_WORKSPACE",
    "REFUSED_WHILE_RUNNING",
    "RPC_INTERNAL_ERROR",
    "RPC_INVALID_PARAMS",
    "RPC_INVALID_REQUEST",
    "RPC_METHOD_NOT_FOUND",
    "RPC_PARSE_ERROR",
    "RPC_REQUEST_CANCELLED",
    "RUN_IN_PROGRESS",
    "UNKNOWN_COMMAND",
    "CrankError",
    "InvalidParams",
    "NoProvider",
    "NoSuchImage",
    "NoSuchWorkspace",
    "NotActiveSession",
    "NotInitialized",
    "Protocol",
    "RefusalKind",
    "RefusedWhileRunning",
    "RunInProgress",
    "UnknownCommand",
    "code_of",
    "invalid_params",
    "kind_of",
]

RefusalKind = (
    SessionErrorKind
    | ConfigErrorKind
    | Literal[
        "run_in_progress",
        "no_such_workspace",
        "unknown_command",
        "no_such_image",
        "not_initialized",
    ]
)
"""Every refusal kind a frontend can meet below it. (Not ``crank.agent.ErrorKind``,
which classes a model's error reply: ``errorKind`` on an assistant message.)"""
RUN_IN_PROGRESS: Final = "run_in_progress"
NO_SUCH_WORKSPACE: Final = "no_such_workspace"
UNKNOWN_COMMAND: Final = "unknown_command"
"""A prompt starting with ``/name`` names no command (crank.workspace.commands)."""
NO_SUCH_IMAGE: Final = "no_such_image"
"""``crank/image`` names a hash the session cannot serve (crank.workspace.images)."""
NOT_INITIALIZED: Final = "not_initialized"
"""A request before ``initialize`` (answered by the frontends' framing)."""

Protocol = Literal["lsp", "acp"]
"""A wire whose numbers a refusal is given in."""

# JSON-RPC 2.0's own numbers (and LSP's RequestCancelled), which both wires use.
RPC_PARSE_ERROR: Final = -32700
RPC_INVALID_REQUEST: Final = -32600
RPC_METHOD_NOT_FOUND: Final = -32601
RPC_INVALID_PARAMS: Final = -32602
RPC_INTERNAL_ERROR: Final = -32603
RPC_REQUEST_CANCELLED: Final = -32800
_ACP_RESOURCE_NOT_FOUND: Final = -32002
_LSP_SERVER_NOT_INITIALIZED: Final = -32002

_BY_KIND: dict[str, type[CrankError]] = {}


class CrankError(Exception):
    """A refusal of a workspace request: the class (and its ``kind``) says which,
    ``message`` says why. ``CrankError(kind, message)`` still works and makes the
    instance of the class registered for ``kind``, so it can be caught by type."""

    kind: ClassVar[RefusalKind]
    CODE: ClassVar[int]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _BY_KIND.setdefault(cls.kind, cls)

    def __new__(cls, *args: Any) -> CrankError:
        if cls is CrankError and len(args) == 2:
            registered = _BY_KIND.get(args[0])
            if registered is not None:
                return Exception.__new__(registered)
            made = Exception.__new__(CrankError)
            made.__dict__["kind"] = args[0]  # a kind only the layers below raise
            return made
        return Exception.__new__(cls)

    def __init__(self, *args: Any) -> None:
        message: str = args[-1]
        super().__init__(message)
        self.message = message


class RunInProgress(CrankError):
    """A prompt while a run is active and ``whileRunning`` does not say what to do."""

    kind = RUN_IN_PROGRESS
    CODE = 1001


class NotActiveSession(CrankError):
    """The request names a session that is not the workspace's active one."""

    kind = NO_SUCH_SESSION
    CODE = 1002


class NoSuchWorkspace(CrankError):
    """No open workspace folder is (or holds) what the request names."""

    kind = NO_SUCH_WORKSPACE
    CODE = 1003


class NoProvider(CrankError):
    """No usable model provider is configured; the message says what to set."""

    kind = NO_PROVIDER
    CODE = 1004


class RefusedWhileRunning(CrankError):
    """The request would change the session while a run appends to it."""

    kind = REFUSED_WHILE_RUNNING
    CODE = 1006


class UnknownCommand(CrankError):
    """``/name`` names no command (or one whose file cannot be read)."""

    kind = UNKNOWN_COMMAND
    CODE = 1008


class NoSuchImage(CrankError):
    """``crank/image`` names a hash the session cannot serve."""

    kind = NO_SUCH_IMAGE
    CODE = 1009


class InvalidParams(CrankError):
    """A request's params do not fit; the message names the field."""

    kind = INVALID_PARAMS
    CODE = RPC_INVALID_PARAMS


class NotInitialized(CrankError):
    """A request before ``initialize``."""

    kind = NOT_INITIALIZED
    CODE = _LSP_SERVER_NOT_INITIALIZED


def invalid_params(field: str, problem: str) -> InvalidParams:
    """An ``invalid_params`` refusal naming the field, e.g.
    ``invalid params: text: must be a string``."""
    return InvalidParams(f"invalid params: {field}: {problem}")


_BELOW: Final[dict[RefusalKind, int]] = {
    "session_unreadable": 1005,
    "session_locked": 1007,
    INTERNAL_ERROR: RPC_INTERNAL_ERROR,
}
"""Crank's numbers for the kinds only the layers below raise (they know no numbers)."""

LSP_CODES: Final[dict[RefusalKind, int]] = {
    **{cls.kind: cls.CODE for cls in _BY_KIND.values()},
    **_BELOW,
}
"""Every refusal kind to its code on the LSP wire (``crank serve``): Crank's numbers."""

CODES: Final = LSP_CODES
"""Crank's own numbers, as docs/protocol.md fixes them (the LSP table)."""

ACP_CODES: Final[dict[RefusalKind, int]] = {
    **LSP_CODES,
    NO_SUCH_SESSION: _ACP_RESOURCE_NOT_FOUND,
    NO_SUCH_IMAGE: _ACP_RESOURCE_NOT_FOUND,
    NOT_INITIALIZED: RPC_INVALID_REQUEST,
}
"""Every refusal kind to its code on the ACP wire: ACP's own numbers where ACP gives
one a meaning (-32002 resource not found), Crank's where it has none."""

_TABLES: Final[dict[Protocol, dict[RefusalKind, int]]] = {"lsp": LSP_CODES, "acp": ACP_CODES}


def kind_of(exc: BaseException) -> RefusalKind | None:
    """The refusal kind of an exception, or None when it is not a refusal (a bug)."""
    if isinstance(exc, CrankError | SessionError | ConfigError):
        return exc.kind
    return None


def code_of(exc: BaseException, protocol: Protocol = "lsp") -> int | None:
    """The code of a refusal on ``protocol``'s wire, or None when it is not one."""
    kind = kind_of(exc)
    return None if kind is None else _TABLES[protocol][kind]
