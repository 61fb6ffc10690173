"""The agent side of the Agent Client Protocol (version 1), over the workspace layer.

``CrankAgent`` owns the connection's sessions (one ``AcpSession``, so one
``WorkspaceHost``, per ACP session) and translates each ACP method into the host's
API, as ``crank.lsp`` does for its methods. It decides nothing about agents.

Methods: ``initialize`` (version negotiation: ``negotiated``; honest capabilities), ``authenticate``
(nothing to authenticate: keys come from the environment or the config file),
``session/new``, ``session/load`` (replays a Crank session file, whoever wrote it; one
another process holds is refused with a message saying so), ``session/list``,
``session/prompt``, ``session/cancel``, ``session/set_mode`` (Crank's permission
modes) and ``session/set_config_option`` (the model). A request before
``initialize`` is refused with -32600 (ACP's -32002 means "resource not found"; the
codes are ``crank.workspace.errors.ACP_CODES``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from crank import __version__
from crank.agent.images import ImageError, ImageInput, check_input
from crank.agent.messages import ImageBlock
from crank.mcp.config import parse_acp_servers
from crank.session import SessionError, SessionLocked
from crank.vendors import ConfigError
from crank.workspace import PERMISSION_MODES, CrankError, Settings, Workspace, WorkspaceHost
from crank.workspace.errors import ACP_CODES, code_of
from crank.workspace.errors import NOT_INITIALIZED as NOT_INITIALIZED_KIND
from crank.workspace.folder_sessions import every_session, folder_sessions

from .session import AcpEditor, AcpSession, HostFactory
from .sessions import page, session_info
from .wire import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, Peer, RpcError

log = logging.getLogger("crank.acp")

PROTOCOL_VERSION = 1
SUPPORTED_VERSIONS = frozenset({PROTOCOL_VERSION})
NOT_INITIALIZED = ACP_CODES[NOT_INITIALIZED_KIND]
MODE_NAMES = {
    "ask": ("Ask", "Ask before every change and command"),
    "autoEdit": ("Auto edit", "Edit files without asking; ask before commands"),
    "auto": ("Auto", "Change files and run commands without asking"),
    "readOnly": ("Read only", "Only read and search; nothing is changed"),
}
SessionLister = Callable[[Path | None], Awaitable[Sequence[tuple[Path, Mapping[str, Any]]]]]
"""The stored sessions of a folder (None: of every folder) with their folder, newest
first (``folder_sessions``)."""


def invalid(field: str, problem: str) -> RpcError:
    return RpcError(INVALID_PARAMS, f"invalid params: {field}: {problem}")


def _object(params: Any) -> dict[str, Any]:
    if not isinstance(params, dict):
        raise invalid("params", "must be an object")
    return params


def _string(params: dict[str, Any], field: str) -> str:
    value = params.get(field)
    if not isinstance(value, str) or not value:
        raise invalid(field, "must be a non-empty string")
    return value


def _image(block: dict[str, Any], where: str) -> ImageBlock:
    """An ACP image block (``mimeType``, base64 ``data``, ``uri?``), checked like every
    prompt image (agent.images): bad base64, an unsupported type, too large."""
    mime, data, uri = block.get("mimeType"), block.get("data"), block.get("uri")
    if not isinstance(mime, str) or not isinstance(data, str):
        raise invalid(where, "an image needs mimeType and data (base64) strings")
    name = uri.rstrip("/").rsplit("/", 1)[-1] if isinstance(uri, str) and uri else None
    try:
        return check_input(ImageInput(mime, data, name), where)
    except ImageError as error:
        raise RpcError(INVALID_PARAMS, f"invalid params: {error}") from None


def prompt_content(blocks: Any) -> tuple[str, list[ImageBlock]]:
    """The prompt's content blocks as one user message: text as it is, embedded
    resources as fenced text under their URI, links named, images after the text."""
    if not isinstance(blocks, list) or not blocks:
        raise invalid("prompt", "must be a non-empty list of content blocks")
    parts: list[str] = []
    images: list[ImageBlock] = []
    for index, block in enumerate(blocks):
        if not isinstance(block, dict):
            raise invalid(f"prompt[{index}]", "must be a content block")
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif kind == "image":
            images.append(_image(block, f"prompt[{index}]"))
        elif kind == "resource" and isinstance(block.get("resource"), dict):
            resource = block["resource"]
            if isinstance(resource.get("text"), str):
                parts.append(f"\n{resource.get('uri', '')}:\n```\n{resource['text']}\n```")
            else:
                raise invalid(f"prompt[{index}].resource", "only text resources are supported")
        elif kind == "resource_link" and isinstance(block.get("uri"), str):
            parts.append(f"[{block.get('name') or block['uri']}]({block['uri']})")
        else:
            raise invalid(f"prompt[{index}]", f"content of type {kind!r} is not supported")
    return "\n".join(parts), images


def negotiated(asked: object) -> int:
    """The version to answer: the one asked when Crank speaks it, else the latest
    Crank speaks (the spec's rule; the client disconnects if that will not do). Any
    value is taken, a string or a negative number included: the answer is always one
    Crank supports, never an echo."""
    if isinstance(asked, int) and not isinstance(asked, bool) and asked in SUPPORTED_VERSIONS:
        return asked
    return PROTOCOL_VERSION


async def model_option(host: Workspace) -> dict[str, Any]:
    """The ``model`` select: exactly ``crank/models``' list (the configured server's
    served models, the catalog's, the current one first when it is in neither), so Zed
    offers what VS Code does; the value is ``api/model-id``."""
    listed = (await host.models())["models"]
    options: list[dict[str, str]] = []
    for entry in listed:
        value = f"{entry['api']}/{entry['id']}"
        if all(option["value"] != value for option in options):
            where = " · served" if entry.get("source") == "server" else ""
            options.append({"value": value, "name": f"{entry['id']} ({entry['api']}{where})"})
    api, model_id = host.current_model()
    current = f"{api}/{model_id}"
    if all(option["value"] != current for option in options):
        options.insert(0, {"value": current, "name": f"{model_id} ({api})"})
    return {
        "id": "model",
        "name": "Model",
        "category": "model",
        "type": "select",
        "currentValue": current,
        "options": options,
    }


class CrankAgent:
    """Owns the connection's sessions; each method is one ACP request."""

    def __init__(
        self,
        peer: Peer,
        host_factory: HostFactory,
        *,
        client_terminal: bool = True,
        list_sessions: SessionLister | None = None,
    ) -> None:
        self.peer = peer
        self._host_factory = host_factory
        self._list_sessions = list_sessions
        self._client_terminal = client_terminal
        self.client_capabilities: dict[str, Any] = {}
        self.sessions: dict[str, AcpSession] = {}
        self.initialized = False
        for method, handler in {
            "initialize": self.initialize,
            "authenticate": self.authenticate,
            "session/new": self.new_session,
            "session/load": self.load_session,
            "session/list": self.list_sessions,
            "session/prompt": self.prompt,
            "session/set_mode": self.set_mode,
            "session/set_config_option": self.set_config_option,
        }.items():
            peer.on_request(method, self._guarded(method, handler))
        peer.on_notification("session/cancel", self.cancel)

    def _guarded(self, method: str, handler: Callable[[Any], Any]) -> Callable[[Any], Any]:
        async def run(params: Any) -> Any:
            if not self.initialized and method != "initialize":
                raise RpcError(NOT_INITIALIZED, f"{method} before initialize")
            try:
                return await handler(params)
            except (CrankError, SessionError, ConfigError) as exc:
                raise RpcError(code_of(exc, "acp") or INTERNAL_ERROR, str(exc)) from exc

        return run

    async def initialize(self, params: Any) -> dict[str, Any]:
        params = _object(params)
        if "protocolVersion" not in params:
            raise invalid("protocolVersion", "is required (Crank speaks ACP version 1)")
        capabilities = params.get("clientCapabilities", {})
        if not isinstance(capabilities, dict):
            raise invalid("clientCapabilities", "must be an object")
        self.client_capabilities = capabilities
        self.initialized = True
        return {
            "protocolVersion": negotiated(params["protocolVersion"]),
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
                "mcpCapabilities": {"http": True, "sse": True},
                "sessionCapabilities": {"list": {}} if self._list_sessions else {},
            },
            "authMethods": [],
            "agentInfo": {"name": "crank", "title": "Crank", "version": __version__},
        }

    async def authenticate(self, params: Any) -> dict[str, Any]:
        raise invalid("methodId", "Crank offers no authentication methods")

    def _session(self, params: dict[str, Any]) -> AcpSession:
        session_id = _string(params, "sessionId")
        session = self.sessions.get(session_id)
        if session is None:
            raise invalid("sessionId", f"no session {session_id} on this connection")
        return session

    def _cwd(self, params: dict[str, Any]) -> Path:
        cwd = Path(_string(params, "cwd"))
        if not cwd.is_absolute():
            raise invalid("cwd", "must be an absolute path")
        if not cwd.is_dir():
            raise invalid("cwd", f"{cwd} is not a folder")
        return cwd.resolve()

    async def _open(self, cwd: Path, params: dict[str, Any]) -> AcpSession:
        servers, problems = parse_acp_servers(params.get("mcpServers", []))
        if problems:
            raise invalid("mcpServers", "; ".join(problems))
        session = AcpSession(
            self.peer,
            self._host_factory,
            cwd,
            self.client_capabilities,
            terminal=self._client_terminal,
        )
        session.host.connect_mcp_servers(servers)  # started with the host's own, in the background
        await session.host.start()
        return session

    async def _setup(self, session: AcpSession) -> dict[str, Any]:
        host = session.host
        return {
            "modes": {
                "currentModeId": host.permission_mode,
                "availableModes": [
                    {"id": mode, "name": MODE_NAMES[mode][0], "description": MODE_NAMES[mode][1]}
                    for mode in PERMISSION_MODES
                ],
            },
            "configOptions": [await model_option(host)],
        }

    async def new_session(self, params: Any) -> dict[str, Any]:
        params = _object(params)
        session = await self._open(self._cwd(params), params)
        self.sessions[session.session_id] = session
        asyncio.get_running_loop().call_soon(session.advertise_commands)  # after the answer
        return {"sessionId": session.session_id, **(await self._setup(session))}

    async def load_session(self, params: Any) -> dict[str, Any]:
        params = _object(params)
        session_id = _string(params, "sessionId")
        cwd = self._cwd(params)
        if session_id in self.sessions:
            raise invalid("sessionId", f"session {session_id} is already open on this connection")
        session = await self._open(cwd, params)
        try:
            await session.host.open_session(session_id)
        except SessionLocked as exc:
            await session.host.close()
            raise RpcError(
                code_of(exc) or INTERNAL_ERROR,
                f"Session {session_id} is open in another Crank process (another editor "
                "window, or another `crank acp`), which is writing it. Close it there, then "
                "load it again; nothing was changed. (Starting a new session instead would "
                "not continue this conversation.)",
            ) from exc
        except BaseException:
            await session.host.close()
            raise
        self.sessions[session.session_id] = session
        await session.replay()
        asyncio.get_running_loop().call_soon(session.advertise_commands)  # after the answer
        return await self._setup(session)

    async def list_sessions(self, params: Any) -> dict[str, Any]:
        """``session/list``: the sessions of ``cwd`` (without one: of every folder),
        newest first, a page at a time (``sessions.py``)."""
        params = _object(params)
        if self._list_sessions is None:
            raise RpcError(METHOD_NOT_FOUND, "method not found: session/list")
        cwd = None if params.get("cwd") is None else self._cwd({"cwd": params["cwd"]})
        listed = await self._list_sessions(cwd)
        try:
            shown, following = page(listed, params.get("cursor"))
        except ValueError as exc:
            raise invalid("cursor", str(exc)) from None
        answer: dict[str, Any] = {"sessions": [session_info(e, where) for where, e in shown]}
        if following is not None:
            answer["nextCursor"] = following
        return answer

    async def prompt(self, params: Any) -> dict[str, Any]:
        params = _object(params)
        session = self._session(params)
        text, images = prompt_content(params.get("prompt"))
        return await session.prompt(text, images)

    async def cancel(self, params: Any) -> None:
        if not isinstance(params, dict) or params.get("sessionId") not in self.sessions:
            log.info("session/cancel for an unknown session: %r", params)
            return
        await self.sessions[params["sessionId"]].cancel()

    async def set_mode(self, params: Any) -> dict[str, Any]:
        params = _object(params)
        session = self._session(params)
        mode = _string(params, "modeId")
        if mode not in PERMISSION_MODES:
            raise invalid("modeId", f"must be one of {', '.join(PERMISSION_MODES)}")
        await session.host.set_permission_mode(mode)
        session.update({"sessionUpdate": "current_mode_update", "currentModeId": mode})
        return {}

    async def set_config_option(self, params: Any) -> dict[str, Any]:
        params = _object(params)
        session = self._session(params)
        if params.get("configId") != "model":
            raise invalid("configId", "the one option is 'model'")
        value = _string(params, "value")
        api, _, model_id = value.partition("/")
        if not model_id:
            raise invalid("value", "must be api/model-id, as the options list them")
        await session.host.set_model(api, model_id)
        return {"configOptions": [await model_option(session.host)]}

    async def close(self) -> None:
        sessions, self.sessions = list(self.sessions.values()), {}
        for session in sessions:
            try:
                await session.host.close()
            except Exception:
                log.exception("closing session %s failed", session.session_id)


def default_session_lister(settings: Settings) -> SessionLister:
    async def listed(cwd: Path | None) -> Sequence[tuple[Path, Mapping[str, Any]]]:
        if cwd is None:
            return await every_session(settings)
        return [(cwd, info) for info in await folder_sessions(cwd, settings)]

    return listed


def default_host_factory(settings: Settings, env: dict[str, str] | None) -> HostFactory:
    def make(editor: AcpEditor, cwd: Path) -> WorkspaceHost:
        return WorkspaceHost(cwd.as_uri(), cwd, editor, settings, env=env, resume_last=False)

    return make
