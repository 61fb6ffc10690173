"""WorkspaceHost: one workspace folder, as the frontends see it.

Every public method is one protocol request; refusals raise CrankError or a session
error carrying the protocol code. A failure inside a run is recorded in that run (the
harness writes it into the transcript) and never escapes into the server. The host
itself only wires its parts together and owns the runs; each part can be read and
tested alone:

- ``ModelConfig`` (``provider.py``): which provider and model the settings name;
- ``SessionSlot`` (``session_slot.py``): the active session, its log and Housekeeper;
- ``ApprovalRouter`` (``approvals.py``): the tools' questions, to the rules and the editor;
- ``state_json`` and friends (``wire.py``): the wire JSON of the state;
- ``DailyRefresh`` (``daily.py``): the prompt rebuilt when the date changes;
- ``EventStream`` (``stream.py``): the envelope, ``seq`` and delta coalescing;
- ``CommandCatalog`` (``commands.py``): what ``/name`` means, rebuilt with the prompt.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, get_args

import anyio.to_thread

from crank.agent.events import Event, Notice, QueueState
from crank.agent.harness import Harness, HarnessBusy, QueueKind, Queues, Run
from crank.agent.messages import ImageBlock
from crank.agent.model import Model, accepts_images
from crank.agent.tasks import Tasks
from crank.agent.tools import Tool
from crank.mcp.config import ServerConfig
from crank.mcp.manager import McpServerState
from crank.prompt import PromptLocations, PromptWatcher, SystemPrompt, compute_prompt
from crank.session import SessionLog, SessionStore
from crank.session.notes import Notes, notes_path
from crank.tools import ApprovalRequest, ToolContext
from crank.tools.info import tool_info
from crank.tools.sandbox import SandboxStatus, probe, protected_paths
from crank.vendors import discover
from crank.vendors.config import default_config_file

from .approvals import ApprovalRouter
from .attachments import context_images
from .changes import RunChanges, snapshot_after
from .client import EditorClient
from .commands import BUILTIN_NAMES, CommandCatalog, parse_command, perform
from .daily import DailyRefresh
from .diagnostics import EditorDiagnostics
from .errors import RefusedWhileRunning, RunInProgress, invalid_params
from .fix_outcome import FixWatch
from .images import image_json, with_stored_images
from .mcp import McpAction, WorkspaceMcp
from .permissions import PERMISSION_MODES, PermissionMode, Permissions
from .prompts import ContextRef, context_text, display_path, fix_file_text
from .provider import ModelConfig
from .server_discovery import discover_server
from .session_slot import SessionSlot, require_idle
from .settings import Settings
from .stream import EventStream, SystemPromptChanged
from .toolset import session_tools
from .wire import messages_json, state_json, system_prompt_json

log = logging.getLogger(__name__)

WhileRunning = Literal["steer", "followUp", "reject"]
"""What ``crank/prompt`` does when a run is active: queue the text, or refuse (``run_in_progress``)."""
WHILE_RUNNING: tuple[WhileRunning, ...] = get_args(WhileRunning)


class WorkspaceHost:
    """One workspace folder. It owns the Harness and the runs (the active run and its
    id, the queues through the Harness), the tool set and its context, the system
    prompt and its watcher, the settings, and the parts listed in the module
    docstring, each of which owns one job. Frontends (LSP, ACP) call its public
    methods and hear its events through ``EditorClient``; they decide nothing."""

    def __init__(
        self,
        uri: str,
        root: Path,
        client: EditorClient,
        settings: Settings,
        *,
        env: dict[str, str] | None = None,
        rules_file: Path | None = None,
        user_dir: Path | None = None,
        resume_last: bool = True,
        today: Callable[[], datetime.date] = datetime.date.today,
        max_turns: int | None = None,
    ) -> None:
        self.uri = uri
        self.root = root.resolve()
        self.client = client
        self.settings = settings
        self._user_dir = user_dir
        self._resume_last = resume_last
        self._today = today
        self.stream = EventStream(uri, client.send_event)
        self.permissions = Permissions(self.root, settings.permission_mode, rules_file)
        self.store = SessionStore(self.root, settings.session_dir)
        self.sandbox_status = SandboxStatus(False, "not checked yet")
        self.approvals = ApprovalRouter(
            uri, self.permissions, client, self._where, self._unconfined_warning
        )
        self.ctx = ToolContext(
            self.root,
            documents=client.documents,
            editor_files=client.files,
            terminal=client.terminal,
            apply_edit=client.apply_edit,
            approve=snapshot_after(self.approvals.approve),  # ask, then snapshot, then run
            outside=self.approvals.outside,
            sandbox=lambda: self.settings.sandbox,
            protected=protected_paths(
                [Path(settings.session_dir).expanduser()] if settings.session_dir else []
            ),
        )
        self.changes = RunChanges(
            self.ctx, lambda: self.session.log, lambda: self.run_id, client.log
        )
        """What each run changed in the workspace (``changes.py``)."""
        self.diagnostics = EditorDiagnostics(
            self.root,
            lambda: getattr(client, "diagnostics", None),  # optional: only LSP editors offer it
            lambda: self.settings.diagnostics,
            self.ctx.display,
        )
        self.notes = Notes(lambda: notes_path(self.session.file))
        """The active session's notes (the note tools follow the session)."""
        self._mcp_seen: list[McpServerState] = []
        self.mcp = WorkspaceMcp(
            self.root, uri, client.log, client.ask_permission, self._where, self._mcp_changed
        )
        tools = self._tool_set(log=None)
        self.model_config = ModelConfig(settings, self.root, env, client.log)
        self.harness = Harness(
            system="", tools=tools, model=self.model_config.configure(), max_turns=max_turns
        )
        self.session = SessionSlot(uri, self.root, self.store, self.harness, settings.context)
        self.harness.build_request = self.session.build_request
        self.harness.before_request = self._before_request
        self.harness.recover_overflow = self.session.recover_overflow
        # Two listeners, in this order: the log saves first (so ``entryId`` is set before
        # anyone hears the event), then the client hears it. Apart, so that a save that
        # fails ends the run (the harness stops telling the saver) and the client still
        # hears the run end, and why.
        self.harness.subscribe(self.session.save, role="saving the session")
        self.harness.subscribe(self._on_event, role="telling the client")
        self._run: Run | None = None
        self._fix: FixWatch | None = None
        """The active run's watch when it is a "Fix This File" run."""
        self.prompt: SystemPrompt | None = None
        self.catalog = CommandCatalog()
        self.watcher: PromptWatcher | None = None
        self._daily: DailyRefresh | None = None
        self._tasks = Tasks()
        """The host's own background work (a prompt refresh after a new session)."""
        self._discovery: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()

    # -- the parts' facts, read through the host ---------------------------------------

    @property
    def session_id(self) -> str:
        return self.session.session_id

    @property
    def run_id(self) -> str | None:
        """The active run's id on the wire, or None when idle."""
        return self._run.id if self._run is not None else None

    @property
    def is_running(self) -> bool:
        """A run is active (a prompt now would be queued or refused)."""
        return self.harness.is_running

    @property
    def permission_mode(self) -> PermissionMode:
        return self.permissions.mode

    def current_model(self) -> tuple[str, str]:
        """The model the next run uses: ``(api, id)``."""
        return self.harness.model.api, self.harness.model.id

    @property
    def tools(self) -> list[Tool]:
        """The tools the next run offers: the Harness's list, the one owner (a run keeps
        the tools it started with). Setting it hands the Harness the new list."""
        return self.harness.tools

    @tools.setter
    def tools(self, tools: list[Tool]) -> None:
        self.harness.set_tools(tools)

    @property
    def active_run_id(self) -> str | None:
        """The id of the run the Harness is running, or None when idle (``crank/state``).
        ``run_id`` is the run being announced, which the host lets go of only after its
        ``agent_settled`` is sent, so that event's envelope still names it."""
        run = self.harness.current_run
        return run.id if run is not None else None

    @property
    def config_error(self) -> str | None:
        return self.model_config.error

    def _where(self) -> tuple[str, str | None]:
        return self.session_id, self.run_id

    def unconfined(self) -> bool:
        """True when commands should be sandboxed but cannot be on this machine: then
        every command is asked about, whatever the mode or remembered rules say."""
        return self.settings.sandbox.mode != "off" and not self.sandbox_status.available

    def _unconfined_warning(self, request: ApprovalRequest) -> str | None:
        if not tool_info(request["toolName"]).runs_commands or not self.unconfined():
            return None
        return (
            f"No sandbox: {self.sandbox_status.detail}. This command would run unconfined, as you."
        )

    # -- lifetime ---------------------------------------------------------------------

    async def start(self) -> None:
        """Start the MCP servers (in the background), resume the newest session,
        build the prompt, arm the watcher."""
        try:
            self._configure_mcp()
            self.sandbox_status = await anyio.to_thread.run_sync(probe)
            if self._resume_last:
                problem = await self.session.resume_newest()
                if problem is not None:
                    self.client.log(f"Crank: the last session was not resumed: {problem}")
                self.tools = self._tool_set()  # a resumed session may offer recall
            first = await self._rebuild()
            self._use_prompt(first)
            watcher = PromptWatcher(
                self._locations(),
                self._rebuild,
                self._on_prompt_change,
                initial=first,
                extra_files=[default_config_file()],
            )
            self.watcher = watcher
            await watcher.start()
            self._daily = DailyRefresh(watcher.refresh, self._today)
            self._daily.start()
            self._discovery = self._tasks.start(self._discover_server())
        finally:
            self.ready.set()

    async def _discover_server(self) -> None:
        """Before the first prompt: the model a base URL alone serves, and the window
        the server runs it with, so the meter is right from the start (see
        ``server_discovery.py``)."""

        def adopt(model: Model) -> None:
            self.harness.set_model(model)
            self.session.set_model(model)

        await discover_server(
            self.model_config,
            lambda: self.harness.model,
            adopt,
            self.session.usage,
            lambda event: self.stream.emit(self.session_id, None, event),
            self.settings.problems,
        )

    async def close(self) -> None:
        """Abort a run (it settles and is saved), release the log, then stop the MCP
        servers and the watcher. The log goes first: a window reload starts the next
        server while this one closes, and that one resumes the session only once its
        lock is free (an MCP server can take seconds to end)."""
        if self._daily is not None:
            self._daily.stop()
        await self.harness.close()
        await self._tasks.close()
        self.stream.flush()
        self.changes.close()
        self.session.close()
        await self.mcp.close()
        if self.watcher is not None:
            await self.watcher.stop()

    # -- configuration ----------------------------------------------------------------

    def _tool_set(
        self, mode: PermissionMode | None = None, *, log: SessionLog | bool | None = True
    ) -> list[Tool]:
        """The tools for ``mode``, plus ``recall`` while the session ``log`` (default:
        the active one) has something compacted away or trimmed out of view."""
        session_log = self.session.log if log is True else log or None
        read_only = (mode or self.permissions.mode) == "readOnly"
        tools = session_tools(
            self.ctx,
            session_log,
            read_only=read_only,
            notes=self.notes,
            trimmed=lambda: self.session.trimmed(),  # the slot is made after the tools
            extra=self.mcp.tools(self.ctx.approve),
        )
        return self.changes.wrap(self.diagnostics.wrap(tools))

    def _configure_mcp(self) -> None:
        settings = self.settings
        self.mcp.configure(
            settings.mcp_servers,
            settings.trusted,
            settings.mcp_trust_read_only,
            settings.mcp_start,
        )

    def _mcp_changed(self) -> None:
        """A server came up, failed or changed its tools: the next run gets the new
        list (a run under way keeps the one it started with)."""
        if not hasattr(self, "session"):
            return  # still being built: the first tool set is made after
        tools = self._tool_set()
        if [t.name for t in tools] != [t.name for t in self.tools] or any(
            a.parameters != b.parameters for a, b in zip(tools, self.tools, strict=True)
        ):
            self.tools = tools
            self.harness.set_tools(tools)
        commands = self.mcp.commands()
        if commands != list(self.catalog.mcp):
            self.catalog.mcp = tuple(commands)
            self.client.commands_changed(self.uri)
        servers = self.mcp.state()
        if servers != self._mcp_seen:
            self._mcp_seen = servers
            self.stream.emit(
                self.session_id, self.run_id, {"type": "mcp_changed", "servers": servers}
            )

    async def _refresh_tools(self) -> None:
        """``recall`` is offered while something on the active branch has been compacted
        away or trimmed out of view: the tool set, and the prompt built from it, follow the session (from the
        next run on; a run keeps the tools it started with)."""
        tools = self._tool_set()
        if [tool.name for tool in tools] == [tool.name for tool in self.tools]:
            return
        self.tools = tools
        if self.watcher is not None:
            await self.watcher.refresh()

    def _locations(self) -> PromptLocations:
        if self._user_dir is not None:
            return PromptLocations(self.root, self.root, self.settings.trusted, self._user_dir)
        return PromptLocations(self.root, self.root, self.settings.trusted)

    async def _rebuild(self) -> SystemPrompt:
        build = await compute_prompt(self.tools, self._locations(), self._today())
        catalog = CommandCatalog(build.skills, build.templates, self.mcp.commands())
        for problem in (*build.problems, *catalog.problems):
            self.client.log(f"Crank: {problem}")
        old, self.catalog = self.catalog, catalog
        if self.prompt is not None and old.commands() != catalog.commands():
            self.client.commands_changed(self.uri)
        return build.prompt

    def _use_prompt(self, prompt: SystemPrompt) -> None:
        """The one place the prompt changes: ``self.prompt`` (its text, hash and sources,
        what ``crank/systemPrompt`` reads) and the Harness's copy of its text, together."""
        self.prompt = prompt
        self.harness.set_system(prompt.text)

    async def _on_prompt_change(self, prompt: SystemPrompt) -> None:
        self._use_prompt(prompt)
        event: SystemPromptChanged = {
            "type": "system_prompt_changed",
            "hash": prompt.hash,
            "sources": prompt.source_list(),
        }
        self.stream.emit(self.session_id, self.run_id, event)

    async def reconfigure(self, settings: Settings) -> None:
        """New settings (``workspace/didChangeConfiguration``): trust, provider, mode."""
        old, self.settings = self.settings, settings
        self.model_config.settings = settings
        self.session.context = settings.context
        if settings.permission_mode != old.permission_mode:
            await self.set_permission_mode(settings.permission_mode)
        if (settings.provider_layers, settings.script) != (old.provider_layers, old.script):
            self.harness.set_model(self.model_config.configure())
            self.session.set_model(self.harness.model)
        if settings.trusted != old.trusted and self.watcher is not None:
            await self.watcher.set_locations(self._locations())
        if (settings.mcp_servers, settings.trusted, settings.mcp_trust_read_only) != (
            old.mcp_servers,
            old.trusted,
            old.mcp_trust_read_only,
        ):
            self._configure_mcp()

    # -- events -----------------------------------------------------------------------

    async def _on_event(self, event: Event) -> None:
        """The client hears the event in its envelope, after the log saved it (a
        ``message_end`` the log failed to write has no ``entryId``: the run then ends
        with an error reply that says why)."""
        self.stream.emit(self.session_id, self.run_id, event)
        if self._fix is not None and not self._fix.hear(event):
            self._fix = None
        if event["type"] == "agent_settled":
            self._run = None
            if self.session.trimmed() and not any(t.name == "recall" for t in self.tools):
                await self._refresh_tools()  # turns went out of view: offer recall
        elif event["type"] == "compaction_end" and event["compacted"]:
            await self._refresh_tools()

    async def _before_request(self, harness: Harness) -> None:
        if self._discovery is not None:
            await asyncio.shield(self._discovery)
        await discover(harness.model)  # the server's real window, before it is measured
        await self.session.before_request(harness)

    # -- runs -------------------------------------------------------------------------

    def check_session(self, session_id: str | None) -> None:
        self.session.check(session_id)

    async def submit(
        self,
        text: str,
        context: Sequence[ContextRef] = (),
        while_running: WhileRunning | None = None,
        images: Sequence[ImageBlock] = (),
    ) -> dict[str, Any]:
        """``crank/prompt``: a ``/command`` (``commands.py``) or a plain prompt. A
        built-in answers ``{sessionId, command, result}``; a skill or template runs
        (or is queued) like ``prompt_run``, the transcript keeping what was typed.
        Images go with a plain prompt or an expanded one, never with a built-in."""
        parsed = parse_command(text)
        if not self.harness.is_running:
            # bounded: a server still starting delays a prompt a little (and says so)
            await self.mcp.settle(self.settings.mcp_startup_wait_ms / 1000)
        if isinstance(parsed, str):
            return self.prompt_run(parsed, context, while_running, images)
        if parsed.name in BUILTIN_NAMES:
            if context:
                raise invalid_params("context", f"/{parsed.name} takes no attached context")
            if images:
                raise invalid_params("images", f"/{parsed.name} takes no images")
            result = await perform(self, parsed)
            return {"sessionId": self.session_id, "command": parsed.name, "result": result}
        offered = self.mcp.prompt(parsed.name)
        if offered is not None:
            text = await self.mcp.expand(offered, parsed.args)
            return self.prompt_run(text, context, while_running, images, typed=parsed.typed)
        expansion = self.catalog.expand(parsed)
        return self.prompt_run(
            expansion.text, context, while_running, images, typed=expansion.typed
        )

    def commands(self) -> dict[str, Any]:
        """``crank/commands``."""
        return self.catalog.to_json()

    def current_api(self) -> str:
        return self.harness.model.api

    def prompt_run(
        self,
        text: str,
        context: Sequence[ContextRef] = (),
        while_running: WhileRunning | None = None,
        images: Sequence[ImageBlock] = (),
        *,
        typed: str | None = None,
    ) -> dict[str, Any]:
        """Start a run, or queue the message when one is active and the client said
        how. ``typed`` is what the user typed when ``text`` is a command's expansion;
        it is kept on the user message, queued or not. Images go with the message
        (queued too), and a context entry that is a whole image file is taken as one;
        the other context is appended to the text either way."""
        self.model_config.require()
        context, attached = context_images(context)
        images = [*images, *attached]
        full = text + context_text(self.root, self.client.documents, context)
        if not self.harness.is_running and (reverted := self.changes.take_notes()):
            full += f"\n\n{reverted}"
        if self.harness.is_running:
            if while_running == "steer":
                self.harness.steer(full, images, typed=typed)
                return self._images_note(images, {"sessionId": self.session_id, "queued": "steer"})
            if while_running == "followUp":
                self.harness.follow_up(full, images, typed=typed)
                answer = {"sessionId": self.session_id, "queued": "followUp"}
                return self._images_note(images, answer)
            raise RunInProgress(
                "a run is already active in this workspace; send whileRunning "
                '"steer" or "followUp", or abort it',
            )
        self.session.ensure_log()
        try:
            run = self.harness.prompt(full, images, typed=typed)
        except HarnessBusy as exc:
            raise RunInProgress(str(exc)) from exc
        self._run = run
        return self._images_note(images, {"sessionId": self.session_id, "runId": run.id})

    def fix_file(
        self,
        path: Path,
        diagnostics: Sequence[dict[str, Any]],
        range_: dict[str, Any] | None,
        instruction: str | None,
    ) -> dict[str, Any]:
        """``crank.fixFile``: a run asked to fix ``path``. When it ends with the file as
        it was (and was neither aborted nor failed), a ``fix_not_applied`` notice says
        so and why (``fix_outcome``): the user watching the file is owed a word."""
        text = fix_file_text(self.root, path, diagnostics, range_, instruction)
        start = len(self.harness.messages)
        answer = self.prompt_run(text)
        run = self._run
        if run is not None and answer.get("runId") == run.id:
            run_id = run.id
            self._fix = FixWatch(
                display_path(self.root, path.resolve()),
                start,
                lambda: self.harness.messages,
                lambda: [f["path"] for f in self.changes.list(self.session.log, run_id)["files"]],
                self._say_unchanged,
            )
        return answer

    def _say_unchanged(self, reason: str) -> None:
        notice: Notice = {"type": "notice", "kind": "fix_not_applied", "message": reason}
        self.stream.emit(self.session_id, self.run_id, notice)

    def _images_note(self, images: Sequence[ImageBlock], answer: dict[str, Any]) -> dict[str, Any]:
        """``answer`` plus ``imagesOmitted`` when the model takes no images."""
        if images and not accepts_images(self.harness.model):
            answer["imagesOmitted"] = (
                f"{self.harness.model.id} does not accept images: the model gets a text "
                f"placeholder for each of the {len(images)} image(s)"
            )
        return answer

    def steer(self, text: str, images: Sequence[ImageBlock] = ()) -> dict[str, Any]:
        """``crank/steer``: ``text`` means what it would in a prompt (a skill or
        template expanded, kept as typed; a built-in refused: ``CommandCatalog.queued``)."""
        return self._queue(self.harness.steer, text, images)

    def follow_up(self, text: str, images: Sequence[ImageBlock] = ()) -> dict[str, Any]:
        """``crank/followUp``: as ``steer``, for when the run would otherwise end."""
        return self._queue(self.harness.follow_up, text, images)

    def _queue(
        self, put: Callable[..., Queues], text: str, images: Sequence[ImageBlock]
    ) -> dict[str, Any]:
        sent, typed = self.catalog.queued(text, running=self.harness.is_running)
        queues = put(sent, images, typed=typed).as_dict()
        return self._images_note(images, dict(queues))

    def clear_queue(self) -> QueueState:
        return self.harness.clear_queue().as_dict()

    def remove_queued(self, which: QueueKind, index: int, text: str | None) -> dict[str, Any]:
        removed = self.harness.remove_queued(which, index, text)
        return {**self.harness.queues.as_dict(), "removed": removed}

    async def abort(self) -> dict[str, Any]:
        """Answers after the run settled and its ``agent_settled`` went out."""
        stop = await self.harness.abort()
        self.stream.flush()
        return {"stopReason": stop}

    # -- reading ----------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        return state_json(
            session_id=self.session_id,
            harness=self.harness,
            run_id=self.active_run_id,
            permission_mode=self.permissions.mode,
            trusted=self.settings.trusted,
            sandbox=self.sandbox_status.to_json(self.settings.sandbox),
            usage=self.session.usage(),
            session_file=self.session.file,
            seq=self.stream.last_seq(self.session_id),
            config_error=self.model_config.error,
            repairs=self.session.repairs,
            branched=self.session.branched(),
            tools=self.tools,
            mcp=self.mcp.state(),
            base_url=self.model_config.base_url,
        )

    async def messages(self, limit: int | None = None, before: int | None = None) -> dict[str, Any]:
        """``crank/messages``: the whole transcript, or the page ``limit`` and ``before``
        ask for (``MessagesParams``: their types are checked on the way in, their
        ranges here). A resumed record still in its file has a page decoded here; the
        whole transcript has it read first, in a worker thread (``Harness.read_record``)."""
        if limit is not None and limit < 1:
            raise invalid_params("limit", f"must be at least 1, not {limit}")
        if before is not None and before < 0:
            raise invalid_params("before", f"must be a position of 0 or more, not {before}")
        if limit is None:
            await self.harness.read_record()
        return messages_json(self.harness, limit=limit, before=before)

    async def sessions(self) -> dict[str, Any]:
        return await self.session.sessions()

    async def image(self, sha256: object) -> dict[str, Any]:
        """``crank/image``: a stored image of the active session (``images.py``)."""
        return await image_json(self.session.log, self.session_id, sha256)

    async def messages_with_images(self) -> list[dict[str, Any]]:
        """The transcript as ``messages`` gives it, its stored images' bytes loaded
        (for a frontend that replays the pictures: ACP's ``session/load``)."""
        messages: list[dict[str, Any]] = (await self.messages())["messages"]
        return await with_stored_images(self.session.log, messages)

    async def tree(self) -> dict[str, Any]:
        return await self.session.tree()

    async def file_changes(self, run_id: str | None) -> dict[str, Any]:
        """``crank/changes``: what one run (or the whole session) changed; in a worker
        thread, as counting a file's +/- lines reads its contents."""
        return await anyio.to_thread.run_sync(self.changes.list, self.session.log, run_id)

    async def revert(
        self, runs: Sequence[str], paths: Sequence[str] | None, force: bool
    ) -> dict[str, Any]:
        """``crank/revert``: refused while a run is active (it could be changing them)."""
        require_idle(self.harness, "crank/revert")
        return await self.changes.revert(self.session.log, runs, paths, force)

    async def keep(self, run: str, paths: Sequence[str] | None) -> dict[str, Any]:
        """``crank/keep``: refused only for the run still active (its list is not final);
        keeping an earlier run's files while another works is fine (nothing is written)."""
        if self.harness.is_running and run == self.active_run_id:
            raise RefusedWhileRunning(f"crank/keep of {run} is refused while it runs")
        return await self.changes.keep(self.session.log, run, paths)

    def file_content(self, sha256: object) -> dict[str, Any]:
        """``crank/fileContent``: a before/after image of this session's changes."""
        return self.changes.content(self.session.log, sha256)

    async def undo(self) -> dict[str, Any]:
        """``/undo``: revert the last run not taken back yet; ``runId`` null when none."""
        require_idle(self.harness, "/undo")
        run = self.changes.last_run(self.session.log)
        if run is None:
            return {"runId": None, "reverted": [], "conflicts": []}
        return {"runId": run, **await self.revert([run], None, False)}

    async def models(self) -> dict[str, Any]:
        return await self.model_config.models_json(self.harness.model)

    def system_prompt(self) -> dict[str, Any]:
        return system_prompt_json(self.prompt)

    # -- changing ---------------------------------------------------------------------

    def _session_changed(self) -> dict[str, Any]:
        self.stream.emit(
            self.session_id, None, {"type": "session_changed", "sessionId": self.session_id}
        )
        return {"sessionId": self.session_id}

    def new_session(self) -> dict[str, Any]:
        self.session.new()
        if any(tool.name == "recall" for tool in self.tools):  # nothing is compacted yet
            self.tools = self._tool_set()
            if self.watcher is not None:  # the prompt follows, in the background
                self._tasks.start(self.watcher.refresh())
        return self._session_changed()

    async def open_session(self, session_id: str) -> dict[str, Any]:
        if not await self.session.open(session_id):
            return {"sessionId": self.session_id}
        await self._refresh_tools()
        return self._session_changed()

    async def mcp_server(self, name: str, action: McpAction) -> dict[str, Any]:
        """``crank/mcpServer``: restart, disable or enable one MCP server."""
        return await self.mcp.act(name, action)

    def connect_mcp_servers(self, servers: Sequence[ServerConfig]) -> None:
        """ACP's ``mcpServers`` for this workspace's session: started with the others
        (in the background), or at once when the workspace is already running."""
        self.mcp.set_acp(servers)

    async def open_newest_session(self) -> dict[str, Any]:
        """Make the workspace's newest session the active one (``crank run --continue``).
        Unlike the resume at ``start``, a newest file that cannot be opened (torn, in use)
        raises its SessionError instead of being passed over for a new session."""
        newest = await anyio.to_thread.run_sync(self.store.newest)
        if newest is None:
            return {"sessionId": self.session_id}
        return await self.open_session_file(newest)

    async def open_session_file(self, path: Path) -> dict[str, Any]:
        """As ``open_session``, for a session file named by its path wherever it is
        (``crank run --session FILE``)."""
        if not await self.session.open_file(path):
            return {"sessionId": self.session_id}
        await self._refresh_tools()
        return self._session_changed()

    async def branch(self, entry_id: str, summarize: bool) -> dict[str, Any]:
        outcome = await self.session.branch(entry_id, summarize)
        await self._refresh_tools()
        return outcome

    async def compact(self, instructions: str | None) -> dict[str, Any]:
        outcome = await self.session.compact(instructions)
        await self._refresh_tools()
        return outcome

    async def set_model(self, api: str, model_id: str) -> dict[str, Any]:
        model = self.model_config.configure({"api": api, "model": model_id})
        self.harness.set_model(model)
        await self.session.note_model(model)
        return {"model": {"api": model.api, "id": model.id}}

    async def set_permission_mode(self, mode: PermissionMode) -> dict[str, Any]:
        if mode not in PERMISSION_MODES:
            raise invalid_params("mode", f"must be one of {', '.join(PERMISSION_MODES)}")
        if (self.permissions.mode == "readOnly") != (mode == "readOnly"):
            # The tool set and the prompt change first; the mode is published (in
            # crank/state) only once the prompt that goes with it is built.
            self.tools = self._tool_set(mode)
            if self.watcher is not None:
                await self.watcher.refresh()
        self.permissions.mode = mode
        return {"mode": mode}
