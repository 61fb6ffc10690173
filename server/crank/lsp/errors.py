"""Crank's error codes on the wire: the one table, owned by the frontend.

The layers below raise typed exceptions that carry a *kind* and know no numbers; this
module maps each kind to the JSON-RPC code protocol.md fixes (extend, never renumber).
The exceptions a handler can meet, and their codes::

    Exception
    ├── crank.workspace.CrankError            .kind is per instance:
    │                                          run_in_progress 1001, no_such_session 1002,
    │                                          no_such_workspace 1003, no_provider 1004,
    │                                          refused_while_running 1006, invalid_params -32602
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

The JSON-RPC and LSP codes of the framing and message layer (``frames.py``) are here
too, so there is one list of every number Crank puts in an ``error.code``. Clients
read the Crank codes by name from ``initialize``'s
``capabilities.experimental.crank.errorCodes`` instead of copying the numbers.
"""

from __future__ import annotations

from typing import Any, Final, get_args

from pygls.exceptions import JsonRpcException

from crank.session import SessionError
from crank.vendors import ConfigError
from crank.workspace import CrankError
from crank.workspace.errors import ErrorKind

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
SERVER_NOT_INITIALIZED: Final = -32002
REQUEST_CANCELLED: Final = -32800

CODES: Final[dict[ErrorKind, int]] = {
    "run_in_progress": 1001,
    "no_such_session": 1002,
    "no_such_workspace": 1003,
    "no_provider": 1004,
    "session_unreadable": 1005,
    "refused_while_running": 1006,
    "session_locked": 1007,
    "invalid_params": INVALID_PARAMS,
    "internal_error": INTERNAL_ERROR,
}
"""Every refusal kind of the layers below, to its wire code."""


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


def kind_of(exc: BaseException) -> ErrorKind | None:
    if isinstance(exc, CrankError):
        return exc.kind
    if isinstance(exc, SessionError | ConfigError):
        return exc.kind
    return None


def rpc_error(exc: BaseException) -> JsonRpcException | None:
    """The JSON-RPC error a refusal from below is answered with, or None when the
    exception is not a refusal (a bug: pygls answers it with -32603)."""
    kind = kind_of(exc)
    if kind is None:
        return None
    message = exc.message if isinstance(exc, CrankError) else str(exc)
    return JsonRpcException(message, CODES[kind])


def wire_codes() -> dict[str, int]:
    """The Crank codes by camelCase name, as ``initialize`` advertises them."""
    return {camel_case(kind): code for kind, code in CODES.items() if code > 0}


def camel_case(name: str) -> str:
    """``no_such_session`` as ``noSuchSession`` (the wire's spelling)."""
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)
