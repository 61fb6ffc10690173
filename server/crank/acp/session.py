"""One ACP session: a WorkspaceHost of its own, and the editor side it talks to.

``AcpEditor`` is the ``EditorClient`` the workspace layer sees: events become
``session/update`` notifications, a permission question becomes
``session/request_permission``. When the client offers them (``initialize``'s
``clientCapabilities``), the tools read and write files through ``fs/*``
(``files.AcpFiles``) and commands run in its terminal (``terminal.AcpTerminal``);
otherwise the tools use the disk and run commands here.

Contract:
- ``prompt`` answers when the run it started (or joined, as a follow-up) settles,
  with ACP's stop reason; a cancelled turn always answers ``cancelled``.
- A run that failed (the provider gave up) answers with an error carrying Crank's
  message, after the updates that led there.
- ``/name`` prompts go through the workspace's commands (``crank.workspace.commands``):
  a built-in answers ``end_turn`` after one ``agent_message_chunk`` saying what it did;
  ``/new`` is not offered (an ACP session is one Crank session: the client starts
  another with ``session/new``). ``available_commands_update`` carries the same list
  after ``session/new``, ``session/load`` and whenever it changes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from crank.agent.messages import ImageBlock
from crank.tools import (
    Documents,
    EditorFiles,
    EditorTerminal,
    EditRefused,
    NoDocuments,
    OpenDocuments,
)
from crank.workspace import Workspace
from crank.workspace.commands import Invocation, describe, parse_command
from crank.workspace.permissions import DECISIONS
from crank.workspace.stream import EventParams

from .files import AcpFiles, offers_files
from .terminal import AcpTerminal, offers_terminal
from .translate import (
    UpdateTranslator,
    diff_content,
    locations,
    offers_notices,
    replay,
    stop_reason,
    text_chunk,
    tool_kind,
    tool_title,
)
from .wire import INTERNAL_ERROR, INVALID_PARAMS, Peer, PeerGone, RpcError

log = logging.getLogger("crank.acp")

PERMISSION_OPTIONS: list[dict[str, str]] = [
    {"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allowSession", "name": "Allow for this session", "kind": "allow_always"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
]
"""The options of every question, each with a kind of its own (clients key their
buttons and shortcuts by kind: codecompanion keeps one option per kind). ACP's
``allow_always`` ("allow and remember the choice") is Crank's "for this session", as
Zed's own agents scope it; Crank's persisted "always allow" has no kind left and is not
offered (docs/acp.md, "Permissions"), though an answer naming it is still honoured."""
_DECISIONS = frozenset(DECISIONS)
"""The answers taken back: Crank's four (``allowAlways`` too, for a client that knows
Crank's names)."""
HostFactory = Callable[["AcpEditor", Path], Workspace]
"""How a session gets its workspace (``WorkspaceHost`` in ``crank acp``)."""
NOT_OFFERED = frozenset({"new"})
"""Built-ins an ACP session does not offer (``/new`` would change the session id)."""


class AcpEditor:
    """The editor as ACP lets an agent reach it, for one session's host."""

    def __init__(
        self, peer: Peer, session: AcpSession, capabilities: dict[str, Any], terminal: bool
    ) -> None:
        self._peer = peer
        self._session = session
        self._documents = NoDocuments()
        session_id = lambda: session.session_id  # noqa: E731
        self._fs = AcpFiles(peer, session_id) if offers_files(capabilities) else None
        self._files: EditorFiles = self._fs or OpenDocuments(self._documents)
        self._terminal = (
            AcpTerminal(peer, session_id, session.show_terminal)
            if terminal and offers_terminal(capabilities)
            else None
        )

    @property
    def documents(self) -> Documents:
        return self._documents  # ACP does not announce open documents

    @property
    def files(self) -> EditorFiles:
        return self._files

    @property
    def terminal(self) -> EditorTerminal | None:
        return self._terminal

    async def apply_edit(self, path: Path, old_text: str, new_text: str) -> str | None:
        if self._fs is None:  # no client text was read, so the tools write the disk
            raise EditRefused(f"{path} cannot be changed through this ACP client")
        return await self._fs.write(path, old_text, new_text)

    def send_event(self, params: EventParams) -> None:
        self._session.on_event(params)

    async def ask_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        name = str(params.get("toolName"))
        raw = params.get("arguments")
        arguments: dict[str, Any] = raw if isinstance(raw, dict) else {}
        call_id = str(params.get("toolCallId"))
        preview = params.get("preview")
        where = locations(self._session.root, arguments)
        if isinstance(preview, dict) and isinstance(preview.get("path"), str):
            where = [{"path": preview["path"]}]  # the resolved path the question is about
        tool_call: dict[str, Any] = {
            "toolCallId": call_id,
            "title": tool_title(name, arguments),
            "kind": tool_kind(name),
            "rawInput": arguments,
            "locations": where,
        }
        if self._session.translator.status.get(call_id) == "pending":
            tool_call["status"] = "pending"  # a running call's status never goes back
        change = diff_content(preview) if isinstance(preview, dict) else []
        if change:
            tool_call["content"] = change
        request = {
            "sessionId": self._session.session_id,
            "toolCall": tool_call,
            "options": PERMISSION_OPTIONS,
        }
        try:
            answer = await self._peer.request("session/request_permission", request)
        except (RpcError, PeerGone) as exc:
            return {"decision": "reject", "reason": f"the client could not be asked ({exc})"}
        outcome = answer.get("outcome") if isinstance(answer, dict) else None
        if not isinstance(outcome, dict) or outcome.get("outcome") != "selected":
            return {"decision": "reject", "reason": "The user cancelled the request."}
        option = outcome.get("optionId")
        if option not in _DECISIONS:
            return {
                "decision": "reject",
                "reason": f"the client chose an unknown option {option!r}",
            }
        if option != "reject":
            self._session.running(call_id, change)
        return {"decision": option}

    def commands_changed(self, workspace: str) -> None:
        self._session.advertise_commands()

    def log(self, message: str) -> None:
        log.warning("%s", message)


class AcpSession:
    """A host, its translator, and the prompts waiting for their turn to end."""

    def __init__(
        self,
        peer: Peer,
        host_factory: HostFactory,
        cwd: Path,
        capabilities: dict[str, Any] | None = None,
        *,
        terminal: bool = True,
    ) -> None:
        self._peer = peer
        self.root = cwd
        self.editor = AcpEditor(peer, self, capabilities or {}, terminal)
        self.host: Workspace = host_factory(self.editor, cwd)
        self.translator = UpdateTranslator(cwd, notices=offers_notices(capabilities or {}))
        self._waiting: list[asyncio.Future[dict[str, Any]]] = []
        self._cancelled = False
        self._replaying = False

    @property
    def session_id(self) -> str:
        return self.host.session_id

    def update(self, update: dict[str, Any]) -> None:
        self._peer.notify("session/update", {"sessionId": self.session_id, "update": update})

    def running(self, call_id: str, content: list[dict[str, Any]]) -> None:
        """The user said yes: the call runs, showing the change it was allowed to make."""
        for update in self.translator.running(call_id, content):
            self.update(update)

    def show_terminal(self, call_id: str, terminal_id: str) -> None:
        self.update(self.translator.show_terminal(call_id, terminal_id))

    def on_event(self, envelope: EventParams) -> None:
        event: dict[str, Any] = dict(envelope["event"])
        for update in self.translator.event(event):
            self.update(update)
        if event.get("type") == "agent_settled":
            self._settled()

    def advertise_commands(self) -> None:
        """``available_commands_update`` with the workspace's commands (but ``new``)."""
        commands: list[dict[str, Any]] = []
        for command in self.host.commands()["commands"]:
            if command["name"] in NOT_OFFERED:
                continue
            entry: dict[str, Any] = {"name": command["name"], "description": command["description"]}
            if command.get("argumentHint"):
                entry["input"] = {"hint": command["argumentHint"]}
            commands.append(entry)
        self.update({"sessionUpdate": "available_commands_update", "availableCommands": commands})

    def _settled(self) -> None:
        reply = self.translator.last_reply or {}
        crank_stop = self.translator.last_stop or reply.get("stopReason")
        cancelled, self._cancelled = self._cancelled, False
        waiting, self._waiting = self._waiting, []
        if crank_stop == "error" and not cancelled:
            message = str(reply.get("errorMessage") or "the run failed")
            for future in waiting:
                if not future.done():
                    future.set_exception(RpcError(INTERNAL_ERROR, message))
            return
        answer = {"stopReason": stop_reason(crank_stop, cancelled)}
        for future in waiting:
            if not future.done():
                future.set_result(answer)

    async def prompt(self, text: str, images: Sequence[ImageBlock] = ()) -> dict[str, Any]:
        """Run ``text`` and its images (or queue them as a follow-up of the running
        turn) and answer when that run settles."""
        parsed = parse_command(text)
        if isinstance(parsed, Invocation) and parsed.name in NOT_OFFERED:
            raise RpcError(
                INVALID_PARAMS,
                f"/{parsed.name} is not available over ACP: start a new session from the "
                "client (session/new)",
            )
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        running = self.host.is_running
        answer = await self.host.submit(
            text, while_running="followUp" if running else None, images=images
        )
        if "command" in answer:
            text = describe(answer["command"], answer["result"])
            self.update(text_chunk("agent_message_chunk", text))
            return {"stopReason": "end_turn"}
        if "imagesOmitted" in answer:
            self.update(text_chunk("agent_message_chunk", f"[{answer['imagesOmitted']}]\n"))
        if not running:
            self.translator.last_reply = None
            self.translator.last_stop = None
        self._waiting.append(future)
        return await future

    async def cancel(self) -> None:
        if self.host.is_running:
            self._cancelled = True
            self.host.clear_queue()
            await self.host.abort()

    async def replay(self) -> None:
        """Send the stored transcript as updates (``session/load``), its stored images
        loaded from beside the session so the client shows them; one that cannot be had
        is shown by name, and the log says why."""
        for update in replay(self.root, await self.host.messages_with_images()):
            self.update(update)
