"""pygls's protocol, with the few places where Crank needs other behaviour.

- Messages of methods lsprotocol does not know (``crank/*``, and answers to our own
  custom requests) keep their params as plain dicts: pygls would turn them into
  namedtuples (renaming keys that are not identifiers). We validate them ourselves.
- A request that arrives after ``shutdown`` is answered (-32600) instead of dropped,
  so every request gets exactly one response.
- ``initialize`` advertises what protocol.md promises (``experimental.crank``,
  workspace folder change notifications, the commands).
"""

from __future__ import annotations

import logging
from collections.abc import Generator
from typing import Any

from lsprotocol import types
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.protocol.json_rpc import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
)

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 1
COMMANDS = ["crank.fixFile", "crank.abort", "crank.newSession"]
INVALID_REQUEST = -32600


class CrankProtocol(LanguageServerProtocol):
    def structure_message(self, data: dict[str, Any]) -> Any:
        if "jsonrpc" not in data:
            return data
        method = data.get("method")
        if isinstance(method, str) and self.get_message_type(method) is None:
            if "id" in data:
                return JsonRPCRequestMessage(
                    id=data["id"], method=method, jsonrpc=data["jsonrpc"], params=data.get("params")
                )
            return JsonRPCNotification(
                method=method, jsonrpc=data["jsonrpc"], params=data.get("params")
            )
        if (
            method is None
            and "id" in data
            and "error" not in data
            and data["id"] in self._result_types
            and self._result_types[data["id"]] is None
        ):
            del self._result_types[data["id"]]
            return JsonRPCResponseMessage(
                id=data["id"], jsonrpc=data["jsonrpc"], result=data.get("result")
            )
        return super().structure_message(data)

    def handle_message(self, message: Any) -> None:
        method = getattr(message, "method", None)
        if (
            self._shutdown
            and method is not None
            and method != types.EXIT
            and hasattr(message, "id")
        ):
            self._send_response(
                message.id,
                error=types.ResponseError(
                    code=INVALID_REQUEST, message=f"{method}: the server is shutting down"
                ),
            )
            return
        super().handle_message(message)

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(
        self, params: types.InitializeParams
    ) -> Generator[Any, Any, types.InitializeResult]:
        result: types.InitializeResult = yield from super().lsp_initialize(params)
        caps = result.capabilities
        caps.experimental = {"crank": {"protocolVersion": PROTOCOL_VERSION}}
        caps.execute_command_provider = types.ExecuteCommandOptions(commands=list(COMMANDS))
        caps.code_action_provider = types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.Source]
        )
        caps.text_document_sync = types.TextDocumentSyncOptions(
            open_close=True,
            change=types.TextDocumentSyncKind.Incremental,
            save=types.SaveOptions(include_text=False),
        )
        caps.workspace = types.WorkspaceOptions(
            workspace_folders=types.WorkspaceFoldersServerCapabilities(
                supported=True, change_notifications=True
            )
        )
        return result
