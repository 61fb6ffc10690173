"""Refusals a workspace request can end in, each carrying its ``kind``.

The layer knows no wire numbers: each frontend's error table (``crank.lsp.errors``)
maps the kind to its code and sends the message unchanged, so every message names
what was wrong and, where there is something to do, what to do. The kinds this layer
adds to those of the session and vendor layers are ``run_in_progress`` and
``no_such_workspace``.
"""

from __future__ import annotations

from typing import Final, Literal

from crank.session.errors import (
    INVALID_PARAMS,
    NO_SUCH_SESSION,
    REFUSED_WHILE_RUNNING,
    SessionErrorKind,
)
from crank.vendors.config import NO_PROVIDER, ConfigErrorKind

__all__ = [
    "INVALID_PARAMS",
    "NO_PROVIDER",
    "NO_SUCH_SESSION",
    "NO_SUCH_WORKSPACE",
    "REFUSED_WHILE_RUNNING",
    "RUN_IN_PROGRESS",
    "CrankError",
    "ErrorKind",
    "invalid_params",
]

ErrorKind = SessionErrorKind | ConfigErrorKind | Literal["run_in_progress", "no_such_workspace"]
"""Every refusal kind a frontend can meet below it."""
RUN_IN_PROGRESS: Final = "run_in_progress"
NO_SUCH_WORKSPACE: Final = "no_such_workspace"


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
