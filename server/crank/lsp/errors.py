"""Crank's error codes on the LSP wire.

The session and vendor layers raise typed exceptions that carry a *kind* and know no
numbers; ``crank.workspace.errors.CODES`` is the one table from kind to the JSON-RPC
code protocol.md fixes (extend, never renumber), kept in the API both frontends
translate so ``crank.acp`` does not copy it. This module turns a refusal into pygls's
``JsonRpcException`` and holds the JSON-RPC and LSP codes of the framing and message
layer. The exceptions a handler can meet, and their codes::

    Exception
    ├── crank.workspace.CrankError            .kind is per instance:
    │                                          run_in_progress 1001, no_such_session 1002,
    │                                          no_such_workspace 1003, no_provider 1004,
    │                                          refused_while_running 1006, unknown_command 1008,
    │                                          no_such_image 1009,
    │                                          invalid_params -32602
    ├── crank.vendors.ConfigError             no_provider             1004
    └── crank.session.SessionError            (by class)
        ├── SessionUnreadable                 session_unreadable      1005
        │   └── TornSession                   session_unreadable      1005
        ├── SessionClosed                     session_unreadable      1005
        ├── NoSuchSession                     no_such_session         1002
        ├── SessionBusy                       refused_while_running   1006
        ├── SessionLocked                     session_locked          1007
        ├── UnknownEntry                      invalid_params        -32602
        └── SummaryFailed                     internal_error        -32603

Clients read the Crank codes by name from ``initialize``'s
``capabilities.experimental.crank.errorCodes`` instead of copying the numbers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, get_args

from crank.workspace import CrankError
from crank.workspace.errors import CODES, ErrorKind, code_of

if TYPE_CHECKING:
    # Imported where used: the constants and ``wire_codes`` are on the path to the
    # first answer, which ``early.py`` sends before pygls (and lsprotocol) load.
    from pygls.exceptions import JsonRpcException

__all__ = [
    "CODES",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "REQUEST_CANCELLED",
    "SERVER_NOT_INITIALIZED",
    "all_kinds",
    "camel_case",
    "rpc_error",
    "wire_codes",
]

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = CODES["invalid_params"]
INTERNAL_ERROR: Final = CODES["internal_error"]
SERVER_NOT_INITIALIZED: Final = -32002
REQUEST_CANCELLED: Final = -32800


def all_kinds() -> set[str]:
    """Every member of ``ErrorKind`` (a union of Literals), for the table's own test."""
    found: set[str] = set()
    pending: list[Any] = [ErrorKind]
    while pending:
        for arg in get_args(pending.pop()):
            if isinstance(arg, str):
                found.add(arg)
            else:
                pending.append(arg)
    return found


def rpc_error(exc: BaseException) -> JsonRpcException | None:
    """The JSON-RPC error a refusal from below is answered with, or None when the
    exception is not a refusal (a bug: pygls answers it with -32603)."""
    from pygls.exceptions import JsonRpcException

    code = code_of(exc)
    if code is None:
        return None
    message = exc.message if isinstance(exc, CrankError) else str(exc)
    return JsonRpcException(message, code)


def wire_codes() -> dict[str, int]:
    """The Crank codes by camelCase name, as ``initialize`` advertises them."""
    return {camel_case(kind): code for kind, code in CODES.items() if code > 0}


def camel_case(name: str) -> str:
    """``no_such_session`` as ``noSuchSession`` (the wire's spelling)."""
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)
