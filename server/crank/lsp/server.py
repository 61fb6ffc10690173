"""The Crank language server: pygls translating between LSP and workspace hosts.

It decides nothing about agents. It keeps one ``WorkspaceHost`` per workspace folder,
turns each ``crank/*`` request into one host call, turns refusals into JSON-RPC errors
with their protocol codes, and reports runs as work-done progress. Every request is
answered exactly once: handlers are coroutines whose result or exception pygls sends.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from crank import __version__
from crank.agent.tasks import Tasks
from crank.vendors.secrets import provider_env
from crank.workspace.checked import check
from crank.workspace.contract import REQUESTS
from crank.workspace.errors import CrankError, NoSuchWorkspace, invalid_params
from crank.workspace.stream import EventParams

from . import pygls_adapter
from .capabilities import SERVER_NAME
from .editor import LspEditor, path_of_uri
from .errors import rpc_error
from .params import Params, check_diagnostics, check_range
from .progress import RunProgress
from .protocol import CrankProtocol

if TYPE_CHECKING:
    # Imported where first used, not here: ``initialize`` needs none of it, and the
    # host brings the vendors, httpx, the tools, the session log and the prompt
    # watcher (tests/lsp/test_startup.py keeps them off the initialize path).
    from crank.workspace import Settings, WorkspaceHost
    from crank.workspace.prompts import ContextRef

log = logging.getLogger(__name__)
Handler = Callable[["CrankServer", Params], Awaitable[Any]]
HANDLERS: dict[str, Handler] = {}
FOLDER_LAYER = "workspace/configuration crank"
"""The folder-scoped layer: the client's answer for one folder, which may come from
that folder's own settings file (see ``crank.workspace.settings.RESTRICTED``)."""


def handles(method: str) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        HANDLERS[method] = handler
        return handler

    return register


class CrankServer(LanguageServer):
    """The LSP side of one editor connection. It owns the map of workspace folders to
    their ``WorkspaceHost`` (created on ``initialize`` and folder changes, closed on
    ``shutdown``), the client's declared capabilities (``permission_requests``), the
    settings the client pushed (``init_crank``, ``pushed_crank``), the one ``LspEditor``
    every host talks through, and run progress. It owns nothing about runs, sessions or
    permissions: those are the hosts'."""

    def __init__(self, *, env: dict[str, str] | None = None) -> None:
        super().__init__(SERVER_NAME, __version__, protocol_cls=CrankProtocol)
        self.env = env
        self.hosts: dict[str, WorkspaceHost] = {}
        self.started = asyncio.Event()
        self.editor = LspEditor(self, self._on_event)
        self.run_progress = RunProgress(self)
        self.init_crank: Any = None
        self.pushed_crank: Any = None
        """``settings.crank`` of the last ``workspace/didChangeConfiguration`` that had one."""
        self.config_changed = False
        self.permission_requests = False
        self.save_documents = False
        """The client declared ``experimental.crank.saveDocuments``: it answers
        ``crank/saveDocument`` (see landing.py)."""
        self.diagnostics = False
        """The client declared ``experimental.crank.diagnostics``: it answers
        ``crank/diagnostics`` (crank.workspace.diagnostics)."""
        self._tasks = Tasks()
        """Background work the server started (hosts starting, handlers' follow-ups)."""
        self._register()

    # -- wiring -----------------------------------------------------------------------

    def _register(self) -> None:
        for method, handler in HANDLERS.items():
            self.feature(method)(self._wrap(method, handler))
        self.feature(types.INITIALIZE)(self._fn(self._initialize))
        self.feature(types.INITIALIZED)(self._fn(self._initialized))
        self.feature(types.SHUTDOWN)(self._fn(self._on_shutdown))
        self.feature(types.EXIT)(self._fn(self._exit))
        self.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)(self._fn(self._folders_changed))
        self.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)(
            self._fn(self._configuration_changed)
        )
        self.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)(self._fn(self._progress_cancelled))
        self.feature(types.TEXT_DOCUMENT_CODE_ACTION)(self._fn(self._code_actions))
        self._register_sync()
        self.command("crank.fixFile")(self._fn(self._fix_file_command))
        self.command("crank.abort")(self._fn(self._abort_command))
        self.command("crank.newSession")(self._fn(self._new_session_command))

    def _register_sync(self) -> None:
        """Document notifications feed the editor's ``DocumentSync`` (saved or not);
        pygls has already updated its copy of the text when these run."""
        sync = self.editor.sync

        def text(uri: str) -> str | None:
            doc = self.workspace.text_documents.get(uri)
            return doc.source if doc is not None else None

        def opened(params: types.DidOpenTextDocumentParams) -> None:
            sync.opened(params.text_document.uri, params.text_document.text)

        def changed(params: types.DidChangeTextDocumentParams) -> None:
            uri = params.text_document.uri
            sync.changed(uri, text(uri) or "")

        def saved(params: types.DidSaveTextDocumentParams) -> None:
            uri = params.text_document.uri
            sync.saved(uri, text(uri))

        def closed(params: types.DidCloseTextDocumentParams) -> None:
            sync.closed(params.text_document.uri)

        self.feature(types.TEXT_DOCUMENT_DID_OPEN)(opened)
        self.feature(types.TEXT_DOCUMENT_DID_CHANGE)(changed)
        self.feature(types.TEXT_DOCUMENT_DID_SAVE)(saved)
        self.feature(types.TEXT_DOCUMENT_DID_CLOSE)(closed)

    @staticmethod
    def _fn(method: Callable[..., Any]) -> Callable[..., Any]:
        """A plain function around a bound method (pygls sets attributes on handlers)."""
        if inspect.iscoroutinefunction(method):

            async def call_async(*args: Any) -> Any:
                return await method(*args)

            return call_async

        def call(*args: Any) -> Any:
            return method(*args)

        return call

    @staticmethod
    def _wrap(method: str, handler: Handler) -> Callable[[CrankServer, Any], Awaitable[Any]]:
        expected = REQUESTS[method][0] if method in REQUESTS else None

        async def run(ls: CrankServer, raw: Any) -> Any:
            return await ls.call(handler, raw, expected)

        return run

    async def call(self, handler: Handler, raw: Any, expected: type | None = None) -> Any:
        """Run ``handler``; its params checked first against the contract's type
        (``expected``: every field, in the type's order; see workspace/checked.py)."""
        try:
            params = Params(raw)
            if expected is not None:
                check(params.raw, expected)
            return await handler(self, params)
        except Exception as exc:
            rpc = rpc_error(exc)
            if rpc is None:
                raise
            raise rpc from exc

    def spawn(self, coro: Awaitable[Any]) -> None:
        async def guarded() -> None:
            try:
                await coro
            except Exception:
                log.exception("a background task failed")

        self._tasks.start(guarded())

    def _on_event(self, params: EventParams) -> None:
        self.run_progress.on_event(params)

    # -- lifecycle --------------------------------------------------------------------

    def _initialize(self, params: types.InitializeParams) -> None:
        options = params.initialization_options
        self.init_crank = options.get("crank") if isinstance(options, dict) else None
        experimental = params.capabilities.experimental
        crank_caps = experimental.get("crank") if isinstance(experimental, dict) else None
        self.permission_requests = bool(
            isinstance(crank_caps, dict) and crank_caps.get("permissionRequests")
        )
        self.save_documents = bool(
            isinstance(crank_caps, dict) and crank_caps.get("saveDocuments") is True
        )
        self.diagnostics = bool(
            isinstance(crank_caps, dict) and crank_caps.get("diagnostics") is True
        )

    def _folders(self) -> list[str]:
        folders = [folder.uri for folder in self.workspace.folders.values()]
        if not folders and self.workspace.root_uri:
            folders = [self.workspace.root_uri]
        return folders

    async def _initialized(self, params: types.InitializedParams) -> None:
        try:
            for uri in self._folders():
                await self.add_host(uri)
        finally:
            self.started.set()

    async def settings_for(self, uri: str) -> Settings | None:
        """The folder's settings, or None when they are malformed (logged by name).
        Before any change the editor's start-up options come first; after
        ``workspace/didChangeConfiguration`` the newer layers (what it pushed, then the
        client's answer for the section) win over them. The answer for the folder is
        folder-scoped: it cannot grant trust, and in an untrusted folder its
        safety-lowering settings are ignored (and logged)."""
        from crank.workspace import merge_layers

        section: Any = None
        caps = self.client_capabilities.workspace
        if caps is not None and caps.configuration:
            try:
                answer = await self.workspace_configuration_async(
                    types.ConfigurationParams(
                        items=[types.ConfigurationItem(scope_uri=uri, section="crank")]
                    )
                )
                section = answer[0] if answer else None
            except Exception as exc:
                log.warning("workspace/configuration failed: %s", exc)
        init = ("initializationOptions.crank", self.init_crank)
        queried = (FOLDER_LAYER, section)
        layers = [init, queried]
        if self.config_changed:
            pushed = ("workspace/didChangeConfiguration settings.crank", self.pushed_crank)
            layers = [pushed, queried, init]
        try:
            settings = merge_layers(layers, folder_scoped={FOLDER_LAYER})
        except CrankError as exc:
            self.editor.log(f"Crank: settings ignored: {exc.message}")
            return None
        for problem in settings.problems:
            self.editor.log(f"Crank: {problem}")
        return settings

    async def add_host(self, uri: str) -> None:
        root = path_of_uri(uri)
        if root is None or uri in self.hosts:
            return
        if not root.is_dir():
            # A host for it would make every request without ``workspace`` ambiguous.
            self.editor.log(f"Crank: workspace folder {uri} ignored: it is not a directory")
            return
        from crank.workspace import Settings, WorkspaceHost

        settings = await self.settings_for(uri) or Settings()
        host = WorkspaceHost(uri, root, self.editor, settings, env=self.env)
        self.hosts[uri] = host
        self.spawn(host.start())

    async def close_all(self) -> None:
        """Close every host, then end what the server and its parts still run."""
        hosts, self.hosts = list(self.hosts.values()), {}
        for outcome in await asyncio.gather(
            *(host.close() for host in hosts), return_exceptions=True
        ):
            if isinstance(outcome, BaseException):
                log.error("closing a workspace failed: %s", outcome)
        await self.run_progress.close()
        await self.editor.sync.close()
        await self._tasks.close()

    async def _on_shutdown(self, *args: Any) -> None:
        await self.close_all()

    async def _exit(self, *args: Any) -> None:
        await self.close_all()

    async def _folders_changed(self, params: types.DidChangeWorkspaceFoldersParams) -> None:
        for folder in params.event.removed:
            host = self.hosts.pop(folder.uri, None)
            if host is not None:
                await host.close()
        for folder in params.event.added:
            await self.add_host(folder.uri)

    async def _configuration_changed(self, params: types.DidChangeConfigurationParams) -> None:
        pushed = params.settings.get("crank") if isinstance(params.settings, dict) else None
        if pushed is not None:
            self.pushed_crank = pushed
        self.config_changed = True
        for uri, host in list(self.hosts.items()):
            settings = await self.settings_for(uri)
            if settings is None:
                continue  # a malformed change keeps what the host has
            await host.ready.wait()
            await host.reconfigure(settings)

    def _progress_cancelled(self, params: types.WorkDoneProgressCancelParams) -> None:
        found = self.run_progress.run_of(params.token)
        if found is not None and found[0].run_id == found[1]:
            self.spawn(found[0].abort())  # only the run this progress reports

    # -- finding the host -------------------------------------------------------------

    async def host_for(self, params: Params) -> WorkspaceHost:
        await self.started.wait()
        uri = params.text("workspace")
        if uri is None:
            if len(self.hosts) == 1:
                host = next(iter(self.hosts.values()))
            elif not self.hosts:
                raise NoSuchWorkspace("no workspace folder is open; open a folder first")
            else:
                raise invalid_params(
                    "workspace", "is required when several workspace folders are open"
                )
        else:
            found = self.hosts.get(uri)
            if found is None:
                known = ", ".join(self.hosts) or "none"
                raise NoSuchWorkspace(f"no workspace {uri} (open: {known})")
            host = found
        await host.ready.wait()
        return host

    async def session_host(self, params: Params) -> WorkspaceHost:
        host = await self.host_for(params)
        host.check_session(params.text("sessionId"))
        return host

    def host_of_path(self, path: Path) -> WorkspaceHost | None:
        best: WorkspaceHost | None = None
        for host in self.hosts.values():
            if path.is_relative_to(host.root) and (
                best is None or len(host.root.parts) > len(best.root.parts)
            ):
                best = host
        return best

    # -- commands and code actions ----------------------------------------------------

    async def fix_file(self, argument: Any) -> dict[str, Any]:
        await self.started.wait()
        params = Params(argument)
        uri = params.required_text("uri")
        path = path_of_uri(uri)
        host = self.host_of_path(path) if path is not None else None
        if path is None or host is None:
            raise NoSuchWorkspace(f"{uri} is not inside an open workspace folder")
        await host.ready.wait()
        diagnostics = check_diagnostics(params.raw.get("diagnostics"), "diagnostics")
        range_ = check_range(params.raw.get("range"), "range")
        return host.fix_file(path, diagnostics, range_, params.text("instruction"))

    async def _fix_file_command(self, *arguments: Any) -> Any:
        return await self.call(
            lambda ls, _p: ls.fix_file(arguments[0] if arguments else None), None
        )

    async def _abort_command(self, *arguments: Any) -> Any:
        async def abort(ls: CrankServer, _params: Params) -> Any:
            return await (await ls.host_for(Params(arguments[0] if arguments else None))).abort()

        return await self.call(abort, None)

    async def _new_session_command(self, *arguments: Any) -> Any:
        async def new(ls: CrankServer, _params: Params) -> Any:
            return (await ls.host_for(Params(arguments[0] if arguments else None))).new_session()

        return await self.call(new, None)

    async def _code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        await self.started.wait()
        uri = params.text_document.uri
        path = path_of_uri(uri)
        if path is None or self.host_of_path(path) is None:
            return None
        diagnostics = list(params.context.diagnostics)
        plain = [pygls_adapter.unstructure(self.protocol, d) for d in diagnostics]
        actions: list[types.CodeAction] = []
        only = params.context.only
        if diagnostics and (not only or types.CodeActionKind.QuickFix in only):
            actions.append(
                types.CodeAction(
                    title="Fix with Crank",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=diagnostics,
                    command=types.Command(
                        title="Fix with Crank",
                        command="crank.fixFile",
                        arguments=[
                            {
                                "uri": uri,
                                "diagnostics": plain,
                                "range": pygls_adapter.unstructure(self.protocol, params.range),
                            }
                        ],
                    ),
                )
            )
        # The whole-file fix is a source action: offered when asked for source actions
        # (VS Code's "Source Action..." menu), and in an unfiltered menu only where there
        # is something to fix, so it is not in every menu of every buffer (Neovim's
        # code_action() asks unfiltered); :CrankFix and the command work anywhere.
        asked = any(kind.startswith(types.CodeActionKind.Source) for kind in only or ())
        if asked or (not only and diagnostics):
            actions.append(
                types.CodeAction(
                    title="Crank: fix this file",
                    kind=types.CodeActionKind.Source,
                    command=types.Command(
                        title="Crank: fix this file",
                        command="crank.fixFile",
                        arguments=[{"uri": uri}],
                    ),
                )
            )
        return actions


# -- crank/* requests ------------------------------------------------------------------


def _context(params: Params) -> list[ContextRef]:
    from crank.workspace.prompts import ContextRef  # lazy, like the tools

    items: list[ContextRef] = []
    for index, item in enumerate(params.objects("context")):
        uri = item.get("uri")
        path = path_of_uri(uri) if isinstance(uri, str) else None
        if path is None:
            raise invalid_params(f"context[{index}].uri", "must be a file URI")
        diagnostics = item.get("diagnostics")
        items.append(
            ContextRef(
                path,
                check_range(item.get("range"), f"context[{index}].range"),
                tuple(diagnostics) if isinstance(diagnostics, list) else None,
            )
        )
    return items


@handles("crank/prompt")
async def _prompt(ls: CrankServer, params: Params) -> Any:
    text = params.required_text("text")
    from crank.workspace import WHILE_RUNNING

    mode = params.optional_choice("whileRunning", WHILE_RUNNING)
    context = _context(params)
    from crank.workspace.attachments import prompt_images  # lazy, like the tools

    images = prompt_images(params.objects("images"))
    return await (await ls.session_host(params)).submit(text, context, mode, images)


@handles("crank/commands")
async def _commands(ls: CrankServer, params: Params) -> Any:
    return (await ls.host_for(params)).commands()


@handles("crank/steer")
async def _steer(ls: CrankServer, params: Params) -> Any:
    text = params.required_text("text")
    from crank.workspace.attachments import prompt_images

    images = prompt_images(params.objects("images"))
    return (await ls.session_host(params)).steer(text, images)


@handles("crank/followUp")
async def _follow_up(ls: CrankServer, params: Params) -> Any:
    text = params.required_text("text")
    from crank.workspace.attachments import prompt_images

    images = prompt_images(params.objects("images"))
    return (await ls.session_host(params)).follow_up(text, images)


@handles("crank/clearQueue")
async def _clear_queue(ls: CrankServer, params: Params) -> Any:
    return (await ls.session_host(params)).clear_queue()


@handles("crank/removeQueued")
async def _remove_queued(ls: CrankServer, params: Params) -> Any:
    from crank.agent.harness import QUEUE_KINDS

    which = params.choice("queue", QUEUE_KINDS)
    index = params.index("index")
    text = params.text("text")
    return (await ls.session_host(params)).remove_queued(which, index, text)


@handles("crank/abort")
async def _abort(ls: CrankServer, params: Params) -> Any:
    return await (await ls.session_host(params)).abort()


@handles("crank/state")
async def _state(ls: CrankServer, params: Params) -> Any:
    return (await ls.session_host(params)).state()


@handles("crank/messages")
async def _messages(ls: CrankServer, params: Params) -> Any:
    return await (await ls.session_host(params)).messages(
        params.raw.get("limit"), params.raw.get("before")
    )


@handles("crank/sessions")
async def _sessions(ls: CrankServer, params: Params) -> Any:
    return await (await ls.host_for(params)).sessions()


@handles("crank/image")
async def _image(ls: CrankServer, params: Params) -> Any:
    return await (await ls.session_host(params)).image(params.raw.get("sha256"))


@handles("crank/newSession")
async def _new_session(ls: CrankServer, params: Params) -> Any:
    return (await ls.host_for(params)).new_session()


@handles("crank/openSession")
async def _open_session(ls: CrankServer, params: Params) -> Any:
    session_id = params.required_text("sessionId")
    return await (await ls.host_for(params)).open_session(session_id)


@handles("crank/tree")
async def _tree(ls: CrankServer, params: Params) -> Any:
    return await (await ls.session_host(params)).tree()


@handles("crank/changes")
async def _changes(ls: CrankServer, params: Params) -> Any:
    return await (await ls.session_host(params)).file_changes(params.text("runId"))


@handles("crank/fileContent")
async def _file_content(ls: CrankServer, params: Params) -> Any:
    return (await ls.session_host(params)).file_content(params.raw.get("sha256"))


@handles("crank/revert")
async def _revert(ls: CrankServer, params: Params) -> Any:
    runs = params.strings("runId", one=True)
    if not runs:
        raise invalid_params("runId", "is required (a run id, or a list of them)")
    host = await ls.session_host(params)
    return await host.revert(runs, params.strings("paths"), params.flag("force"))


@handles("crank/keep")
async def _keep(ls: CrankServer, params: Params) -> Any:
    run = params.required_text("runId")
    return await (await ls.session_host(params)).keep(run, params.strings("paths"))


@handles("crank/branch")
async def _branch(ls: CrankServer, params: Params) -> Any:
    entry_id = params.required_text("entryId")
    summarize = params.flag("summarize")
    return await (await ls.session_host(params)).branch(entry_id, summarize)


@handles("crank/compact")
async def _compact(ls: CrankServer, params: Params) -> Any:
    instructions = params.text("instructions")
    return await (await ls.session_host(params)).compact(instructions)


@handles("crank/models")
async def _models(ls: CrankServer, params: Params) -> Any:
    return await (await ls.host_for(params)).models()


@handles("crank/setModel")
async def _set_model(ls: CrankServer, params: Params) -> Any:
    api = params.required_text("api")
    model_id = params.required_text("id")
    return await (await ls.session_host(params)).set_model(api, model_id)


@handles("crank/systemPrompt")
async def _system_prompt(ls: CrankServer, params: Params) -> Any:
    return (await ls.host_for(params)).system_prompt()


@handles("crank/setPermissionMode")
async def _set_permission_mode(ls: CrankServer, params: Params) -> Any:
    from crank.workspace import PERMISSION_MODES

    mode = params.choice("mode", PERMISSION_MODES)
    return await (await ls.host_for(params)).set_permission_mode(mode)


@handles("crank/mcpServer")
async def _mcp_server(ls: CrankServer, params: Params) -> Any:
    from crank.workspace.mcp import MCP_ACTIONS

    name = params.required_text("name")
    action = params.choice("action", MCP_ACTIONS)
    return await (await ls.host_for(params)).mcp_server(name, action)


def build_server(env: dict[str, str] | None = None) -> CrankServer:
    return CrankServer(env=provider_env() if env is None else env)
