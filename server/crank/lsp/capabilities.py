"""What the server answers to ``initialize``: written once, sent by either path.

The answer is almost fixed: what protocol.md promises (``experimental.crank`` with the
protocol version and Crank's error codes by name, workspace folder change
notifications, the commands, incremental sync, code actions), the server's name and
version, and one choice that depends on the client, the position encoding (the first
of the client's ``general.positionEncodings`` that Crank supports, else UTF-16, the
rule pygls applies to its own documents). ``early.py`` sends it before pygls is
imported; ``protocol.CrankProtocol`` returns the same when the early path declined.
Nothing here imports pygls or lsprotocol: this module is on the path to the first
answer (tests/lsp/test_startup.py).
"""

from __future__ import annotations

from typing import Any, Final

from crank import __version__

from .errors import wire_codes

SERVER_NAME: Final = "crank"
PROTOCOL_VERSION: Final = 1
COMMANDS: Final = ("crank.fixFile", "crank.abort", "crank.newSession")
ENCODINGS: Final = ("utf-8", "utf-16", "utf-32")
"""The position encodings documents can be kept in (pygls supports these three)."""
DEFAULT_ENCODING: Final = "utf-16"
"""LSP's default, and the answer when the client offers nothing Crank supports."""


def position_encoding(params: Any) -> str:
    """The encoding positions are counted in, from the client's preference order."""
    capabilities = params.get("capabilities") if isinstance(params, dict) else None
    general = capabilities.get("general") if isinstance(capabilities, dict) else None
    offered = general.get("positionEncodings") if isinstance(general, dict) else None
    for encoding in offered if isinstance(offered, list) else ():
        if encoding in ENCODINGS:
            return str(encoding)
    return DEFAULT_ENCODING


def initialize_result(params: Any) -> dict[str, Any]:
    """The ``InitializeResult`` for these (already checked) params, as JSON."""
    return {
        "capabilities": {
            "positionEncoding": position_encoding(params),
            "textDocumentSync": {"openClose": True, "change": 2, "save": {"includeText": False}},
            "codeActionProvider": {"codeActionKinds": ["quickfix", "source"]},
            "executeCommandProvider": {"commands": list(COMMANDS)},
            "workspace": {"workspaceFolders": {"supported": True, "changeNotifications": True}},
            "experimental": {
                "crank": {"protocolVersion": PROTOCOL_VERSION, "errorCodes": wire_codes()}
            },
        },
        "serverInfo": {"name": SERVER_NAME, "version": __version__},
    }
