"""WorkspaceHost: everything one workspace folder owns, with a lifetime.

One harness, its active session (saved by the log's listener, resumed by replay), the
system prompt and its watcher, the provider, the permission rules, the event stream.
Every public method is one protocol request; refusals raise CrankError or a session
error carrying the protocol code. A failure inside a run is recorded in that run (the
harness writes it into the transcript) and never escapes into the server.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, get_args

import anyio.to_thread

from crank.agent.events import Event, QueueState
from crank.agent.harness import Harness, HarnessBusy, Listener, QueueKind, Run
from crank.agent.loop import RunPrompt
from crank.agent.messages import Message
from crank.agent.model import Model, ModelRequest
from crank.agent.tools import Tool, ToolCall
from crank.prompt import PromptLocations, PromptWatcher, SystemPrompt, compute_prompt
from crank.session import ContextUsage, Housekeeper, SessionError, SessionLog, SessionStore
from crank.session.log import new_session_id
from crank.session.recall import Recall
from crank.tools import (
    ApprovalRequest,
    Decision,
    PathPreview,
    ToolContext,
    approval_request,
    read_only_tools,
    standard_tools,
)
from crank.tools.recall import make_recall
from crank.tools.sandbox import SandboxStatus, probe, protected_paths
from crank.vendors import ConfigError, ProviderConfig, discover, known_models, lookup
from crank.vendors.config import default_config_file

from .client import EditorClient
from .errors import (
    NO_PROVIDER,
    NO_SUCH_SESSION,
    REFUSED_WHILE_RUNNING,
    RUN_IN_PROGRESS,
    CrankError,
    invalid_params,
)
from .models import Unconfigured, build_model
from .permissions import DECISIONS, PERMISSION_MODES, PermissionMode, Permissions
from .prompts import context_text
from .sessions import tree_json
from .settings import Settings
from .stream import EventStream, SystemPromptChanged

log = logging.getLogger(__name__)

WhileRunning = Literal["steer", "followUp", "reject"]
"""What ``crank/prompt`` does when a run is active: queue the text, or refuse (1001)."""
WHILE_RUNNING: tuple[WhileRunning, ...] = get_args(WhileRunning)


def open_and_replay(path: Path) -> tuple[SessionLog, list[Message]]:
    """Open a session for writing and read its transcript: file work, for a thread."""
    opened = SessionLog.open(path)
    try:
        return opened, opened.replay()
    except BaseException:
        opened.close()
        raise


def seconds_until_tomorrow() -> float:
    """From now to a second past the next local midnight."""
    now = datetime.datetime.now()
    midnight = datetime.datetime.combine(now.date() + datetime.timedelta(days=1), datetime.time())
    return (midnight - now).total_seconds() + 1


class WorkspaceHost:
    """Everything one workspace folder owns that has a lifetime: the Harness, the
    active session (its log, Housekeeper and id), the system prompt and its watcher
    (plus the daily refresh for the date), the provider configuration, the permission
    rules and the routing of approval questions to the editor, and the event stream.
    Each public method answers one protocol request (see the module docstring)."""

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
    ) -> None:
        self.uri = uri
        self.root = root.resolve()
        self.client = client
        self.settings = settings
        self._env = env
        self._user_dir = user_dir
        self._resume_last = resume_last
        self._today = today
        self._daily: asyncio.Task[None] | None = None
        self._prompt_refresh: asyncio.Task[object] | None = None
        self.stream = EventStream(uri, client.send_event)
        self.permissions = Permissions(self.root, settings.permission_mode, rules_file)
        self.store = SessionStore(self.root, settings.session_dir)
        self.ctx = ToolContext(
            self.root,
            documents=client.documents,
            apply_edit=client.apply_edit,
            approve=self._approve,
            outside=self._outside,
            sandbox=lambda: self.settings.sandbox,
            protected=protected_paths(
                [Path(settings.session_dir).expanduser()] if settings.session_dir else []
            ),
        )
        self.sandbox_status = SandboxStatus(False, "not checked yet")
        self.log: SessionLog | None = None
        self.tools = self._tool_set()
        self.provider: ProviderConfig | None = None
        self.config_error: str | None = None
        model = self._configure_model()
        self.keeper: Housekeeper | None = None
        self.harness = Harness(
            system="",
            tools=self.tools,
            model=model,
            build_request=self._build_request,
            before_request=self._before_request,
            recover_overflow=self._recover_overflow,
        )
        self.harness.subscribe(self._on_event)
        self._log_listener: Listener | None = None
        self.session_id = new_session_id()
        self._run: Run | None = None
        self.prompt: SystemPrompt | None = None
        self.watcher: PromptWatcher | None = None
        self.ready = asyncio.Event()

    # -- lifetime ---------------------------------------------------------------------

    async def start(self) -> None:
        """Resume the newest session, build the prompt, arm the watcher."""
        try:
            self.sandbox_status = await asyncio.to_thread(probe)
            if self._resume_last:
                await self._resume_newest()
                self.tools = self._tool_set()  # a resumed session may offer recall
                self.harness.set_tools(self.tools)
            first = await self._rebuild()
            self.prompt = first
            self.harness.set_system(first.text)
            self.watcher = PromptWatcher(
                self._locations(),
                self._rebuild,
                self._on_prompt_change,
                initial=first,
                extra_files=[default_config_file()],
            )
            await self.watcher.start()
            self._daily = asyncio.create_task(self._refresh_each_day())
        finally:
            self.ready.set()

    async def _refresh_each_day(self) -> None:
        """The prompt names today's date (day only): rebuild it when the day changes, so
        a server left running overnight does not brief the agent with yesterday."""
        built_for = self._today()
        while True:
            await asyncio.sleep(seconds_until_tomorrow())
            if self._today() != built_for and self.watcher is not None:
                built_for = self._today()
                await self.watcher.refresh()

    async def close(self) -> None:
        """Abort a run (it settles and is saved), stop the watcher, release the log."""
        if self._daily is not None:
            self._daily.cancel()
        await self.harness.abort()
        self.stream.flush()
        if self.watcher is not None:
            await self.watcher.stop()
        if self.log is not None:
            self.log.close()

    async def _resume_newest(self) -> None:
        try:
            path = await anyio.to_thread.run_sync(self.store.newest)
            if path is None:
                return
            opened, messages = await anyio.to_thread.run_sync(open_and_replay, path)
            self.harness.replace_messages(messages)
            self._adopt_log(opened)
        except (SessionError, OSError) as exc:
            self.client.log(f"Crank: the last session was not resumed: {exc}")

    # -- configuration ----------------------------------------------------------------

    def _tool_set(self, mode: PermissionMode | None = None) -> list[Tool]:
        if (mode or self.permissions.mode) == "readOnly":
            tools = read_only_tools(self.ctx)
        else:
            tools = standard_tools(self.ctx)
        if self.log is not None:
            recall = Recall(self.log)
            if recall.available():
                tools.append(make_recall(recall))
        return tools

    async def _refresh_tools(self) -> None:
        """``recall`` is offered while something on the active branch has been compacted
        away: the tool set, and the prompt built from it, follow the session (from the
        next run on; a run keeps the tools it started with)."""
        tools = self._tool_set()
        if [tool.name for tool in tools] == [tool.name for tool in self.tools]:
            return
        self.tools = tools
        self.harness.set_tools(tools)
        if self.watcher is not None:
            await self.watcher.refresh()

    def _configure_model(self, override: dict[str, Any] | None = None) -> Model:
        try:
            model, provider = build_model(
                self.settings, self.root, override=override, env=self._env
            )
        except ConfigError as exc:
            if override:
                raise ConfigError(
                    f"Crank cannot switch to {override['api']} model {override['model']}: "
                    f"{exc} (keys and base URLs configured for another api are never "
                    "used for this one)",
                    exc.code,
                ) from exc
            self.provider, self.config_error = None, str(exc)
            return Unconfigured(str(exc))
        self.provider, self.config_error = provider, None
        for withheld in provider.withheld_keys:
            self.client.log(
                f"Crank: {withheld} is not sent to {provider.public()['baseUrl']}: a key "
                "goes only to the endpoint it was configured with"
            )
        return model

    def _locations(self) -> PromptLocations:
        if self._user_dir is not None:
            return PromptLocations(self.root, self.root, self.settings.trusted, self._user_dir)
        return PromptLocations(self.root, self.root, self.settings.trusted)

    async def _rebuild(self) -> SystemPrompt:
        build = await compute_prompt(self.tools, self._locations(), self._today())
        for problem in build.problems:
            self.client.log(f"Crank: {problem}")
        return build.prompt

    async def _on_prompt_change(self, prompt: SystemPrompt) -> None:
        self.prompt = prompt
        self.harness.set_system(prompt.text)
        event: SystemPromptChanged = {
            "type": "system_prompt_changed",
            "hash": prompt.hash,
            "sources": prompt.source_list(),
        }
        self.stream.emit(self.session_id, self._run_id(), event)

    async def reconfigure(self, settings: Settings) -> None:
        """New settings (``workspace/didChangeConfiguration``): trust, provider, mode."""
        old, self.settings = self.settings, settings
        if settings.permission_mode != old.permission_mode:
            await self.set_permission_mode(settings.permission_mode)
        if (settings.provider_layers, settings.script) != (old.provider_layers, old.script):
            self.harness.set_model(self._configure_model())
            if self.keeper is not None:
                self.keeper.set_model(self.harness.model)
        if settings.trusted != old.trusted and self.watcher is not None:
            await self.watcher.set_locations(self._locations())

    # -- events -----------------------------------------------------------------------

    def _run_id(self) -> str | None:
        return self._run.id if self._run is not None else None

    @property
    def run_id(self) -> str | None:
        """The active run's id on the wire, or None when idle."""
        return self._run_id()

    async def _on_event(self, event: Event) -> None:
        """The one listener: the log saves first (so ``entryId`` is set), then the
        client hears the event in its envelope."""
        if self._log_listener is not None:
            outcome = self._log_listener(event)
            if outcome is not None:
                await outcome
        run_id = self._run_id()
        self.stream.emit(self.session_id, run_id, event)
        if event["type"] == "agent_settled":
            self._run = None
        elif event["type"] == "compaction_end" and event["compacted"]:
            await self._refresh_tools()

    def usage(self) -> ContextUsage:
        if self.keeper is not None:
            return self.keeper.usage(self.harness)
        # No log yet means a new, empty session: nothing used, nothing in the window.
        window = self.harness.model.context_window
        return {
            "contextTokens": 0,
            "contextWindow": window,
            "input": 0,
            "output": 0,
            "cacheRead": 0,
            "cacheWrite": 0,
            "cost": 0.0,
        }

    # -- context (compaction, policies): the Housekeeper of the active session ----------

    async def _build_request(self, record: Sequence[Message], prompt: RunPrompt) -> ModelRequest:
        assert self.keeper is not None, "a run always has a session log"
        return await self.keeper.build_request(record, prompt)

    async def _before_request(self, harness: Harness) -> None:
        await discover(harness.model)  # the server's real window, before it is measured
        if self.keeper is not None:
            await self.keeper.before_request(harness)

    async def _recover_overflow(self, harness: Harness) -> bool:
        return self.keeper is not None and await self.keeper.recover_overflow(harness)

    # -- permissions ------------------------------------------------------------------

    def unconfined(self) -> bool:
        """True when commands should be sandboxed but cannot be on this machine: then
        every command is asked about, whatever the mode or remembered rules say."""
        return self.settings.sandbox.mode != "off" and not self.sandbox_status.available

    async def _ask(self, request: ApprovalRequest) -> Decision:
        must_ask = request["toolName"] == "bash" and self.unconfined()
        if not must_ask and not self.permissions.needs_asking(request):
            return Decision.allow()
        params: dict[str, Any] = {
            "workspace": self.uri,
            "sessionId": self.session_id,
            "runId": self._run_id(),
            "toolCallId": request["toolCallId"],
            "toolName": request["toolName"],
            "arguments": request["arguments"],
            "preview": request["preview"],
        }
        if must_ask:
            params["warning"] = (
                f"No sandbox: {self.sandbox_status.detail}. This command would run "
                "unconfined, as you."
            )
        try:
            answer = await self.client.ask_permission(params)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return Decision.reject(f"the editor could not be asked ({exc})")
        decision = answer.get("decision")
        if decision not in DECISIONS:
            return Decision.reject(f"the editor answered with an unknown decision {decision!r}")
        if decision == "reject":
            reason = answer.get("reason")
            return Decision.reject(reason if isinstance(reason, str) else None)
        self.permissions.remember(request, decision)
        return Decision.allow()

    async def _approve(self, request: ApprovalRequest) -> Decision:
        return await self._ask(request)

    async def _outside(self, path: Path, call: ToolCall) -> Decision:
        if self.permissions.mode == "auto":
            return Decision.allow()
        preview: PathPreview = {"kind": "path", "path": str(path)}
        return await self._ask(approval_request(call, preview, tool_name="outside"))

    # -- runs -------------------------------------------------------------------------

    def _ensure_log(self) -> SessionLog:
        if self.log is None:
            self._adopt_log(
                SessionLog.create(self.store.directory, str(self.root), self.session_id)
            )
        assert self.log is not None
        return self.log

    def _adopt_log(self, new_log: SessionLog) -> None:
        self._drop_log()
        self.log = new_log
        self._log_listener = new_log.listener()
        self.session_id = new_log.session_id
        self.keeper = Housekeeper(new_log, self.harness.model, self.settings.context)
        self.keeper.attach(self.harness)

    def _drop_log(self) -> None:
        if self.keeper is not None:
            self.keeper.detach()
        if self.log is not None:
            self.log.close()
        self.log, self._log_listener, self.keeper = None, None, None

    def _require_model(self) -> None:
        if self.config_error is not None:
            raise CrankError(NO_PROVIDER, self.config_error)

    def _require_idle(self, what: str) -> None:
        if self.harness.is_running:
            raise CrankError(
                REFUSED_WHILE_RUNNING, f"{what} is refused while a run is active; abort it first"
            )

    def check_session(self, session_id: str | None) -> None:
        if session_id is not None and session_id != self.session_id:
            raise CrankError(
                NO_SUCH_SESSION,
                f"session {session_id} is not the active session of {self.uri} "
                f"(that is {self.session_id}); open it with crank/openSession first",
            )

    def prompt_run(
        self,
        text: str,
        context: Sequence[tuple[Path, dict[str, Any] | None]] = (),
        while_running: WhileRunning | None = None,
    ) -> dict[str, Any]:
        """Start a run, or queue the text when one is active and the client said how."""
        self._require_model()
        if self.harness.is_running:
            if while_running == "steer":
                self.harness.steer(text)
                return {"sessionId": self.session_id, "queued": "steer"}
            if while_running == "followUp":
                self.harness.follow_up(text)
                return {"sessionId": self.session_id, "queued": "followUp"}
            raise CrankError(
                RUN_IN_PROGRESS,
                "a run is already active in this workspace; send whileRunning "
                '"steer" or "followUp", or abort it',
            )
        full = text + context_text(self.root, self.client.documents, context)
        self._ensure_log()
        try:
            run = self.harness.prompt(full)
        except HarnessBusy as exc:
            raise CrankError(RUN_IN_PROGRESS, str(exc)) from exc
        self._run = run
        return {"sessionId": self.session_id, "runId": run.id}

    def steer(self, text: str) -> QueueState:
        return self.harness.steer(text).as_dict()

    def follow_up(self, text: str) -> QueueState:
        return self.harness.follow_up(text).as_dict()

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
        model = self.harness.model
        state: dict[str, Any] = {
            "sessionId": self.session_id,
            "running": self.harness.is_running,
        }
        if self._run is not None:
            state["runId"] = self._run.id
        state.update(
            {
                "model": {"api": model.api, "id": model.id, "contextWindow": model.context_window},
                "permissionMode": self.permissions.mode,
                "trusted": self.settings.trusted,
                "sandbox": self.sandbox_status.to_json(self.settings.sandbox),
                "queue": self.harness.queues.as_dict(),
                "usage": self.usage(),
                "sessionFile": str(self.store.directory / f"{self.session_id}.jsonl"),
                "seq": self.stream.last_seq(self.session_id),
            }
        )
        if self.config_error is not None:
            state["configError"] = self.config_error
        if self.keeper is not None and self.keeper.repairs:
            state["viewRepairs"] = self.keeper.repairs.to_json()
        return state

    def messages(self) -> dict[str, Any]:
        return {"messages": list(self.harness.messages)}

    async def sessions(self) -> dict[str, Any]:
        listed = await anyio.to_thread.run_sync(self.store.list)  # a cold listing reads the files
        return {"sessions": [dict(summary) for summary in listed]}

    def tree(self) -> dict[str, Any]:
        if self.log is None:
            return {"tip": None, "entries": []}
        return tree_json(self.log)

    async def models(self) -> dict[str, Any]:
        """What the configured server serves (``source: "server"``, asked each time:
        a local server's models come and go), then the catalog's cloud models, the
        current model first when it is in neither."""
        model = self.harness.model
        served = await discover(model, refresh=True) if self.config_error is None else None
        listed: list[dict[str, Any]] = [
            {
                "api": model.api,
                "id": entry.id,
                "contextWindow": model.context_window
                if entry.id == model.id
                else entry.context_window
                or lookup(model.api, entry.id, compatible=True).context_window,
                "source": "server",
            }
            for entry in served or ()
        ]
        listed += [
            {"api": api, "id": mid, "contextWindow": window, "source": "catalog"}
            for api, mid, window in known_models()
        ]
        current = {
            "api": model.api,
            "id": model.id,
            "contextWindow": model.context_window,
            "source": "config",
        }
        if self.config_error is None and not any(
            m["api"] == current["api"] and m["id"] == current["id"] for m in listed
        ):
            listed.insert(0, current)
        return {"models": listed}

    def system_prompt(self) -> dict[str, Any]:
        if self.prompt is None:
            return {"text": "", "hash": "", "sources": []}
        return self.prompt.to_json()

    # -- changing ---------------------------------------------------------------------

    def new_session(self) -> dict[str, Any]:
        self._require_idle("starting a new session")
        self._drop_log()
        self.session_id = new_session_id()
        self.harness.replace_messages([])
        if any(tool.name == "recall" for tool in self.tools):  # nothing is compacted yet
            self.tools = self._tool_set()
            self.harness.set_tools(self.tools)
            if self.watcher is not None:  # the prompt follows; held so it is not collected
                self._prompt_refresh = asyncio.create_task(self.watcher.refresh())
        self.stream.emit(
            self.session_id, None, {"type": "session_changed", "sessionId": self.session_id}
        )
        return {"sessionId": self.session_id}

    async def open_session(self, session_id: str) -> dict[str, Any]:
        self._require_idle("opening a session")
        path = self.store.path_of(session_id)
        if self.log is not None and self.log.path == path:
            return {"sessionId": self.session_id}
        opened, messages = await anyio.to_thread.run_sync(open_and_replay, path)  # off the loop
        if self.harness.is_running:  # a prompt won the race while the file was read
            opened.close()
            self._require_idle("opening a session")
        self._adopt_log(opened)
        self.harness.replace_messages(messages)
        await self._refresh_tools()
        self.stream.emit(
            self.session_id, None, {"type": "session_changed", "sessionId": self.session_id}
        )
        return {"sessionId": self.session_id}

    async def branch(self, entry_id: str, summarize: bool) -> dict[str, Any]:
        self._require_idle("branching")
        if self.log is None:
            raise invalid_params("entryId", f"no entry {entry_id} (the session is still empty)")
        model = self.harness.model if summarize else None
        tip = await self.log.branch_to(entry_id, summarize=model)
        self.harness.replace_messages(self.log.replay())
        if self.keeper is not None:
            self.keeper.recount()
        await self._refresh_tools()
        return {"tip": tip}

    async def compact(self, instructions: str | None) -> dict[str, Any]:
        self._require_idle("compaction")
        if self.keeper is None:
            return {"compacted": False, "reason": "the session is empty: nothing to compact"}
        outcome = await self.keeper.compact(self.harness, instructions=instructions)
        await self._refresh_tools()
        return outcome

    async def set_model(self, api: str, model_id: str) -> dict[str, Any]:
        model = self._configure_model({"api": api, "model": model_id})
        self.harness.set_model(model)
        if self.keeper is not None:
            self.keeper.set_model(model)
        if self.log is not None:
            await self.log.append_model_change(model.api, model.id)
        return {"model": {"api": model.api, "id": model.id}}

    async def set_permission_mode(self, mode: PermissionMode) -> dict[str, Any]:
        if mode not in PERMISSION_MODES:
            raise invalid_params("mode", f"must be one of {', '.join(PERMISSION_MODES)}")
        if (self.permissions.mode == "readOnly") != (mode == "readOnly"):
            # The tool set and the prompt change first; the mode is published (in
            # crank/state) only once the prompt that goes with it is built.
            self.tools = self._tool_set(mode)
            self.harness.set_tools(self.tools)
            if self.watcher is not None:
                await self.watcher.refresh()
        self.permissions.mode = mode
        return {"mode": mode}
