"""Driving the real server over stdio with pytest-lsp's client.

The server is a subprocess (``python -m crank.lsp``) with HOME and the XDG folders in
tmp_path, so sessions, permission rules and config never touch the real user's.
Custom messages arrive at the test client as pygls namedtuples: ``plain`` turns them
back into dicts (our keys are all identifiers, so nothing is renamed).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.workspace import TextDocument
from pytest_lsp import LanguageClient, make_test_lsp_client

REPO = Path(__file__).resolve().parents[2]


def plain(value: Any) -> Any:
    if hasattr(value, "_asdict"):
        return {key: plain(item) for key, item in value._asdict().items()}
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


def read_text(path: Path) -> str:
    """Reading a small file from a test coroutine (blocking is fine for a test)."""
    return path.read_text("utf-8")


def server_env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("OPENAI_", "ANTHROPIC_", "CRANK_"))
    }
    env.update(
        HOME=str(home),
        XDG_DATA_HOME=str(home / "data"),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_CACHE_HOME=str(home / "cache"),
        PYTHONPATH=str(REPO / "server"),
    )
    return env


def provider_for(url: str) -> dict[str, Any]:
    return {"api": "openai", "baseUrl": f"{url}/v1", "model": "test", "apiKey": "x"}


class Crank:
    """A running server plus what it sent: events, permission questions, edits."""

    def __init__(self, client: LanguageClient) -> None:
        self.client = client
        self.events: list[dict[str, Any]] = []
        self.permission_requests: list[dict[str, Any]] = []
        self.answer_permission: Callable[[dict[str, Any]], Any] = lambda p: {"decision": "allow"}
        self.edits: list[Any] = []
        self.apply_edits = True
        self.buffers: dict[str, TextDocument] = {}
        """The client's own copy of each document it opened (an editor's buffers)."""
        self.saves: list[dict[str, Any]] = []
        """``crank/saveDocument`` requests received (only with ``save_documents``)."""
        self.answer_save: Callable[[dict[str, Any]], dict[str, Any] | None] = lambda p: None
        """Return an answer to send instead of saving (to play a client that fails)."""
        self.format_on_save: Callable[[str], str] | None = None
        """Rewrite the buffer as it is saved (a formatter run by the editor on save)."""
        self.commands_changed: list[dict[str, Any]] = []
        """``crank/commandsChanged`` notifications received."""
        self.diagnostics_asked: list[dict[str, Any]] = []
        """``crank/diagnostics`` requests received (only with ``diagnostics``)."""
        self.answer_diagnostics: Callable[[dict[str, Any]], Any] = lambda p: {"items": []}
        """The answer (or a coroutine giving it) to a ``crank/diagnostics`` request."""
        self._changed = asyncio.Event()

    def open(self, path: Path, text: str) -> None:
        """Open ``path`` in this client with ``text`` in its buffer (didOpen)."""
        uri = path.as_uri()
        self.buffers[uri] = TextDocument(uri, text, version=1)
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id="python", version=1, text=text
                )
            )
        )

    def type_text(self, path: Path, text: str) -> None:
        """The user replaces the buffer's text without saving (didChange, whole text)."""
        doc = self.buffers[path.as_uri()]
        version = (doc.version or 1) + 1
        doc.apply_change(types.TextDocumentContentChangeWholeDocument(text=text))
        doc.version = version
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=doc.uri, version=version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    def buffer(self, path: Path) -> str:
        return self.buffers[path.as_uri()].source

    async def request(self, method: str, params: Any = None) -> Any:
        return plain(await self.client.protocol.send_request_async(method, params))

    async def wait_for(
        self, predicate: Callable[[dict[str, Any]], bool], within: float = 15.0
    ) -> dict[str, Any]:
        async def scan() -> dict[str, Any]:
            seen = 0
            while True:
                for event in self.events[seen:]:
                    if predicate(event):
                        return event
                seen = len(self.events)
                self._changed.clear()
                await self._changed.wait()

        return await asyncio.wait_for(scan(), within)

    async def until(self, condition: Callable[[], bool], within: float = 15.0) -> None:
        """Wait until ``condition()`` holds, re-checking after every message received."""

        async def check() -> None:
            while not condition():
                self._changed.clear()
                await self._changed.wait()

        await asyncio.wait_for(check(), within)

    async def settled(self, run_id: str, within: float = 15.0) -> list[dict[str, Any]]:
        await self.wait_for(
            lambda e: e.get("runId") == run_id and e["event"]["type"] == "agent_settled", within
        )
        return [e for e in self.events if e.get("runId") == run_id]

    def _record(self, params: Any) -> None:
        self.events.append(plain(params))
        self._changed.set()


def folder(path: Path) -> types.WorkspaceFolder:
    return types.WorkspaceFolder(uri=path.as_uri(), name=path.name)


@asynccontextmanager
async def running_server(
    tmp_path: Path,
    folders: list[Path],
    crank_options: dict[str, Any] | None,
    *,
    permission_requests: bool = True,
    progress: bool = False,
    configuration: bool = False,
    save_documents: bool = False,
    diagnostics: bool = False,
    section: dict[str, Any] | None = None,
    extra_env: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
    server_args: tuple[str, ...] = (),
) -> AsyncIterator[Crank]:
    """``section``: what the client answers for ``workspace/configuration`` section
    ``crank`` from the start (implies ``configuration``); ``extra_env``: variables
    added to the server's scrubbed environment (provider keys, for instance)."""
    client = make_test_lsp_client()
    crank = Crank(client)
    if section is not None:
        configuration = True
        client.set_configuration(section, section="crank")

    @client.feature("crank/event")
    def on_event(params: Any) -> None:
        crank._record(params)

    @client.feature("crank/commandsChanged")
    def on_commands_changed(params: Any) -> None:
        crank.commands_changed.append(plain(params))
        crank._changed.set()

    @client.feature("crank/requestPermission")
    async def on_permission(params: Any) -> Any:
        asked = plain(params)
        crank.permission_requests.append(asked)
        answer = crank.answer_permission(asked)
        if asyncio.iscoroutine(answer):
            answer = await answer
        return answer

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def on_apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        crank.edits.append(params)
        if not crank.apply_edits:
            return types.ApplyWorkspaceEditResult(applied=False, failure_reason="the user said no")
        for change in params.edit.document_changes or []:
            assert isinstance(change, types.TextDocumentEdit)
            version = (change.text_document.version or 0) + 1
            buffer = crank.buffers.get(change.text_document.uri)
            if buffer is not None:
                for e in change.edits:
                    assert isinstance(e, types.TextEdit)
                    buffer.apply_change(
                        types.TextDocumentContentChangePartial(range=e.range, text=e.new_text)
                    )
                buffer.version = version
            client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(
                        uri=change.text_document.uri, version=version
                    ),
                    content_changes=[
                        types.TextDocumentContentChangePartial(range=e.range, text=e.new_text)
                        for e in change.edits
                        if isinstance(e, types.TextEdit)
                    ],
                )
            )
        return types.ApplyWorkspaceEditResult(applied=True)

    @client.feature("crank/saveDocument")
    def on_save(params: Any) -> Any:
        """An editor that saves as asked: its buffer goes to disk, then didSave."""
        asked = plain(params)
        crank.saves.append(asked)
        answer = crank.answer_save(asked)
        if answer is not None:
            return answer
        uri = asked["uri"]
        path = Path(uri.removeprefix("file://"))
        if crank.format_on_save is not None:
            crank.type_text(path, crank.format_on_save(crank.buffer(path)))
        path.write_text(crank.buffers[uri].source, "utf-8")
        client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        return {"saved": True}

    @client.feature("crank/diagnostics")
    async def on_diagnostics(params: Any) -> Any:
        asked = plain(params)
        crank.diagnostics_asked.append(asked)
        answer = crank.answer_diagnostics(asked)
        if asyncio.iscoroutine(answer):
            answer = await answer
        return answer

    env = {**(env if env is not None else server_env(tmp_path)), **(extra_env or {})}
    await client.start_io(
        sys.executable, "-m", "crank.lsp", *server_args, env=env, cwd=str(tmp_path)
    )
    experimental: dict[str, Any] = {
        "crank": {"events": True, "permissionRequests": permission_requests}
    }
    if save_documents:
        experimental["crank"]["saveDocuments"] = True
    if diagnostics:
        experimental["crank"]["diagnostics"] = True
    capabilities = types.ClientCapabilities(
        experimental=experimental,
        window=types.WindowClientCapabilities(work_done_progress=progress),
        workspace=types.WorkspaceClientCapabilities(configuration=configuration),
    )
    init = {"crank": crank_options} if crank_options is not None else None
    result = await client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities,
            workspace_folders=[folder(path) for path in folders],
            initialization_options=init,
        )
    )
    crank.initialize_result = result  # type: ignore[attr-defined]
    try:
        yield crank
    finally:
        try:
            # A hang bound on the answer to shutdown (a run aborted and saved) and the
            # process's end. That end once took 5-10 s at load 17-19, in the
            # interpreter's teardown (0.28 s of CPU); the server now skips it
            # (serve.leave), and the whole shutdown took under 2 s at load 15.
            await asyncio.wait_for(client.shutdown_session(), 10)
        finally:
            await client.stop()


async def model_received(model: Any, count: int) -> None:
    """Wait until the loopback model server holds ``count`` whole requests, for tests
    that need the run to be waiting on the model (not still building its request)."""
    for _ in range(1500):
        if len(model.requests) >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"the model server never received {count} request(s)")


WRITE_A = {
    "toolCalls": [{"id": "w1", "name": "write", "arguments": {"path": "a.txt", "content": "A"}}]
}
"""A model reply whose tool call needs permission: with ``HeldPermission`` the run
stays active, surely, until the test lets it go."""


class HeldPermission:
    """Answers permission questions only when released, so a test can act while a run
    is surely active: ``crank.answer_permission = held.answer``, then ``await
    held.asked()`` (the run is waiting on the question), then ``held.release()``."""

    def __init__(self) -> None:
        self._asked = asyncio.Event()
        self._release = asyncio.Event()

    async def answer(self, question: dict[str, Any]) -> dict[str, Any]:
        self._asked.set()
        await self._release.wait()
        return {"decision": "allow"}

    async def asked(self, within: float = 15.0) -> None:
        await asyncio.wait_for(self._asked.wait(), within)

    def release(self) -> None:
        self._release.set()
