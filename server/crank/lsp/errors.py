"""Crank's error codes on the LSP wire.

The refusals, their classes and the tree of them are drawn in
``crank.workspace.errors`` beside the classes; ``LSP_CODES`` there is this wire's table
(Crank's own numbers, as protocol.md fixes them). This module turns a refusal into
pygls's ``JsonRpcException`` and names the JSON-RPC and LSP codes of the framing and
message layer, read from that same module. Clients read the Crank codes by name from
``initialize``'s ``capabilities.experimental.crank.errorCodes`` instead of copying the
numbers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, get_args

from crank.workspace import CrankError
from crank.workspace.errors import (
    CODES,
    LSP_CODES,
    NOT_INITIALIZED,
    RPC_INTERNAL_ERROR,
    RPC_INVALID_PARAMS,
    RPC_INVALID_REQUEST,
    RPC_METHOD_NOT_FOUND,
    RPC_PARSE_ERROR,
    RPC_REQUEST_CANCELLED,
    RefusalKind,
    code_of,
)

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

PARSE_ERROR: Final = RPC_PARSE_ERROR
INVALID_REQUEST: Final = RPC_INVALID_REQUEST
METHOD_NOT_FOUND: Final = RPC_METHOD_NOT_FOUND
INVALID_PARAMS: Final = RPC_INVALID_PARAMS
INTERNAL_ERROR: Final = RPC_INTERNAL_ERROR
SERVER_NOT_INITIALIZED: Final = LSP_CODES[NOT_INITIALIZED]
REQUEST_CANCELLED: Final = RPC_REQUEST_CANCELLED


def all_kinds() -> set[str]:
    """Every member of ``RefusalKind`` (a union of Literals), for the table's own test."""
    found: set[str] = set()
    pending: list[Any] = [RefusalKind]
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

    code = code_of(exc, "lsp")
    if code is None:
        return None
    message = exc.message if isinstance(exc, CrankError) else str(exc)
    return JsonRpcException(message, code)


def wire_codes() -> dict[str, int]:
    """The Crank codes by camelCase name, as ``initialize`` advertises them."""
    return {camel_case(kind): code for kind, code in LSP_CODES.items() if code > 0}


def camel_case(name: str) -> str:
    """``no_such_session`` as ``noSuchSession`` (the wire's spelling)."""
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)
