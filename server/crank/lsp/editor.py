"""The editor as the workspace layer sees it (``crank.workspace.EditorClient``),
implemented over one LSP connection.

- Open documents come from pygls's incrementally synced text, keyed by resolved path.
- ``apply_edit`` sends the smallest replacing ``TextEdit`` through
  ``workspace/applyEdit`` against the document's version and checks ``applied``, then
  has the change saved or written (``landing``), so the disk holds it on return.
- ``sync`` tracks what the client reports about each open document (saved or not).
- ``ask_permission`` uses ``crank/requestPermission`` when the client declared
  ``experimental.crank.permissionRequests``, else ``window/showMessageRequest``.
  Cancelling the asking task withdraws the question with ``$/cancelRequest``.
- ``commands_changed`` sends ``crank/commandsChanged {workspace}``.
- ``send_event`` writes the ``crank/event`` bytes straight to the transport: it is the
  hot path of streaming, so it skips pygls's generic object conversion.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from crank.tools import EditRefused, OpenDocuments
from crank.workspace.stream import EventParams

from . import pygls_adapter
from .framing import frame
from .landing import Landing
from .sync import DocumentSync

if TYPE_CHECKING:
    from .server import CrankServer

log = logging.getLogger(__name__)

CHOICES = {
    "Allow": "allow",
    "Allow for this session": "allowSession",
    "Always allow": "allowAlways",
    "Reject": "reject",
}


def path_of_uri(uri: str) -> Path | None:
    path = to_fs_path(uri)
    return Path(path).resolve() if path else None


class LspDocuments:
    """``crank.tools.Documents`` over the documents the client has open."""

    def __init__(self, server: CrankServer) -> None:
        self._server = server

    def _open(self) -> dict[str, TextDocument]:
        try:
            docs: dict[str, TextDocument] = self._server.workspace.text_documents
        except RuntimeError:  # not initialized yet
            return {}
        return docs

    def document(self, path: Path) -> TextDocument | None:
        for uri, doc in self._open().items():
            if path_of_uri(uri) == path:
                return doc
        return None

    def text_of(self, path: Path) -> str | None:
        doc = self.document(path)
        return doc.source if doc is not None else None

    def paths(self) -> Iterable[Path]:
        found = (path_of_uri(uri) for uri in list(self._open()))
        return [path for path in found if path is not None]


def smallest_edit(doc: TextDocument, old: str, new: str) -> types.TextEdit:
    """One TextEdit replacing only what differs (keeps the cursor and undo tidy)."""
    limit = min(len(old), len(new))
    start = 0
    while start < limit and old[start] == new[start]:
        start += 1
    end_old, end_new = len(old), len(new)
    while end_old > start and end_new > start and old[end_old - 1] == new[end_new - 1]:
        end_old -= 1
        end_new -= 1
    return types.TextEdit(
        range=types.Range(
            start=doc.client_position_at_offset(start),
            end=doc.client_position_at_offset(end_old),
        ),
        new_text=new[start:end_new],
    )


class LspEditor:
    """One per connection; shared by every workspace host of that connection."""

    def __init__(self, server: CrankServer, on_event: Callable[[EventParams], None]) -> None:
        self._server = server
        self._on_event = on_event
        self.documents = LspDocuments(server)
        self.files = OpenDocuments(self.documents)
        self.terminal = None  # LSP has no terminal for the agent: commands run here
        self.sync = DocumentSync(path_of_uri)
        self.landing = Landing(
            self.documents,
            self.sync,
            self._send_edit,
            self.request,
            lambda: server.save_documents,
        )

    def send_event(self, params: EventParams) -> None:
        from crank.workspace.images import as_replayed  # lazy: not on the initialize path

        self.send_notification("crank/event", as_replayed(params))
        self._on_event(params)

    def commands_changed(self, workspace: str) -> None:
        self.send_notification("crank/commandsChanged", {"workspace": workspace})

    def send_notification(self, method: str, params: Any) -> None:
        writer = self._server.protocol.writer
        if writer is None:
            return
        try:
            writer.write(frame({"jsonrpc": "2.0", "method": method, "params": params}))
        except (BrokenPipeError, ConnectionError):
            log.warning("the client is gone; %s not delivered", method)

    def log(self, message: str) -> None:
        log.warning("%s", message)
        self._server.window_log_message(
            types.LogMessageParams(type=types.MessageType.Warning, message=message)
        )

    async def request(self, method: str, params: Any) -> Any:
        """Send a request and await its answer; cancelling withdraws it
        (``$/cancelRequest``), since pygls does not do that itself."""
        msg_id = f"crank-{uuid.uuid4().hex[:12]}"
        protocol = self._server.protocol
        future = protocol.send_request_async(method, params, msg_id=msg_id)
        try:
            return await future
        except asyncio.CancelledError:
            pygls_adapter.forget_request(protocol, msg_id)
            self.send_notification("$/cancelRequest", {"id": msg_id})
            raise

    async def apply_edit(self, path: Path, old_text: str, new_text: str) -> str | None:
        return await self.landing.apply(path, old_text, new_text)

    @property
    def diagnostics(self) -> Callable[[list[str]], Awaitable[list[dict[str, Any]]]] | None:
        """How the workspace asks for the editor's diagnostics (``crank/diagnostics``),
        or None when the client did not declare ``experimental.crank.diagnostics``."""
        return self._ask_diagnostics if self._server.diagnostics else None

    async def _ask_diagnostics(self, uris: list[str]) -> list[dict[str, Any]]:
        answer = await self.request("crank/diagnostics", {"uris": uris})
        items = answer.get("items") if isinstance(answer, dict) else None
        if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
            raise ValueError("the answer to crank/diagnostics has no list of objects 'items'")
        return items

    async def _send_edit(self, doc: TextDocument, old_text: str, new_text: str) -> None:
        edit = types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=doc.uri, version=doc.version
                    ),
                    edits=[smallest_edit(doc, old_text, new_text)],
                )
            ]
        )
        params = types.ApplyWorkspaceEditParams(edit=edit, label="Crank")
        try:
            result = await self.request(types.WORKSPACE_APPLY_EDIT, params)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise EditRefused(f"the editor failed to apply the edit: {exc}") from exc
        applied = getattr(result, "applied", None)
        if applied is None and isinstance(result, dict):
            applied = result.get("applied")
        if not applied:
            reason = getattr(result, "failure_reason", None)
            if reason is None and isinstance(result, dict):
                reason = result.get("failureReason")
            raise EditRefused(str(reason or "no reason given"))

    async def ask_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        progress = self._server.run_progress
        progress.waiting(params, True)
        try:
            if self._server.permission_requests:
                answer = await self.request("crank/requestPermission", params)
                return answer if isinstance(answer, dict) else {}
            return await self._ask_with_message(params)
        finally:
            progress.waiting(params, False)

    async def _ask_with_message(self, params: dict[str, Any]) -> dict[str, Any]:
        preview = params.get("preview") or {}
        if preview.get("kind") == "command":
            what = f"run the command: {preview['command']}"
        elif preview.get("kind") == "diff":
            what = f"change the file {preview['path']}"
            if preview.get("unsavedChanges"):
                what += " (your unsaved changes to it are saved with it)"
        else:
            what = (
                f"use {params['toolName']} on {preview.get('path', 'a path outside the workspace')}"
            )
        request = types.ShowMessageRequestParams(
            type=types.MessageType.Warning,
            message=f"Crank wants to {what}"
            + (f" ({params['warning']})" if params.get("warning") else ""),
            actions=[types.MessageActionItem(title=title) for title in CHOICES],
        )
        answer = await self.request(types.WINDOW_SHOW_MESSAGE_REQUEST, request)
        title = getattr(answer, "title", None)
        if title is None:
            return {"decision": "reject", "reason": "the question was dismissed"}
        return {"decision": CHOICES.get(title, "reject")}
