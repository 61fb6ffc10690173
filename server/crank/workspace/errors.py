"""Errors a workspace request can end in, each carrying its protocol error code.

The frontends turn ``code`` and ``str(error)`` into a JSON-RPC error unchanged, so
every message names what was wrong and, where there is something to do, what to do.
"""

from __future__ import annotations

RUN_IN_PROGRESS = 1001
NO_SUCH_SESSION = 1002
NO_SUCH_WORKSPACE = 1003
NO_PROVIDER = 1004
REFUSED_WHILE_RUNNING = 1006
INVALID_PARAMS = -32602


class CrankError(Exception):
    """A refusal with a protocol code (1001-1007, or -32602 for bad params)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def invalid_params(field: str, problem: str) -> CrankError:
    """-32602 naming the field, e.g. ``invalid params: text: must be a string``."""
    return CrankError(INVALID_PARAMS, f"invalid params: {field}: {problem}")
