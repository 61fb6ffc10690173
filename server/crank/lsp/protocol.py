"""pygls's protocol, with the few places where Crank needs other behaviour.

- Messages of methods lsprotocol does not know (``crank/*``, and answers to our own
  custom requests) keep their params as plain dicts: pygls would turn them into
  namedtuples (renaming keys that are not identifiers). We validate them ourselves.
- ``initialize`` advertises what protocol.md promises (``experimental.crank``,
  workspace folder change notifications, the commands) and Crank's error codes by name.

What may reach pygls at all (and what is answered before it would) is decided by
``frames.Inbox``; pygls's private names are reached only through ``pygls_adapter``.
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

from . import pygls_adapter
from .errors import wire_codes

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 1
COMMANDS = ["crank.fixFile", "crank.abort", "crank.newSession"]


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
            and pygls_adapter.take_plain_result(self, data["id"])
        ):
            return JsonRPCResponseMessage(
                id=data["id"], jsonrpc=data["jsonrpc"], result=data.get("result")
            )
        return super().structure_message(data)

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(
        self, params: types.InitializeParams
    ) -> Generator[Any, Any, types.InitializeResult]:
        result: types.InitializeResult = yield from super().lsp_initialize(params)
        caps = result.capabilities
        caps.experimental = {
            "crank": {"protocolVersion": PROTOCOL_VERSION, "errorCodes": wire_codes()}
        }
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
