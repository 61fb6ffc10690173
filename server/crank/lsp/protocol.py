"""pygls's protocol, with the few places where Crank needs other behaviour.

- Messages of methods lsprotocol does not know (``crank/*``, and answers to our own
  custom requests) keep their params as plain dicts: pygls would turn them into
  namedtuples (renaming keys that are not identifiers). We validate them ourselves.
- ``initialize`` answers what ``capabilities.py`` says (protocol.md's promises), the
  same answer ``early.py`` sends when it answers before pygls is imported.

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
from .capabilities import initialize_result

log = logging.getLogger(__name__)


class CrankProtocol(pygls_adapter.PlainAnswers, LanguageServerProtocol):
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
        # pygls's own handling sets up its workspace, the client's capabilities and
        # calls our handler; the answer is capabilities.py's, the one ``early.py``
        # sends when it answers first, so both paths say the same.
        pygls_result: types.InitializeResult = yield from super().lsp_initialize(params)
        answer = initialize_result(pygls_adapter.unstructure(self, params))
        chosen = pygls_result.capabilities.position_encoding
        if chosen != answer["capabilities"]["positionEncoding"]:
            log.error(
                "pygls keeps documents in %s but the answer says %s",
                chosen,
                answer["capabilities"]["positionEncoding"],
            )
        result: types.InitializeResult = pygls_adapter.structure(
            self, answer, types.InitializeResult
        )
        return result
