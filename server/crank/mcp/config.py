"""Server configuration in the format users already write.

``{"mcpServers": {"name": {"command", "args", "env", "cwd"}}}`` for a local server,
``{"name": {"type": "http", "url", "headers"}}`` for a streamable HTTP one (``"sse"``
for the legacy transport), with Crank's own optional ``timeoutMs`` (a call's limit,
default 60 s) and ``disabled``. A malformed entry is refused by name (one sentence in
``problems``) and the others are kept: one typo never costs the user every server.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

McpSource = Literal["user", "editor", "workspace", "acp"]
"""Where a server's configuration came from, least specific first."""
MCP_SOURCES: tuple[McpSource, ...] = get_args(McpSource)
Transport = Literal["stdio", "http", "sse"]
TRANSPORTS: tuple[Transport, ...] = get_args(Transport)
McpStart = Literal["open", "firstUse"]
"""When a workspace's servers start (setting ``mcpStart``): when the workspace opens
(in the background; the default), or at its first prompt (which then waits for them,
bounded by ``mcpStartupWaitMs``), for users who open many folders and prompt in few."""
MCP_STARTS: tuple[McpStart, ...] = get_args(McpStart)
DEFAULT_TIMEOUT_S = 60.0
WORKSPACE_FILE = ".mcp.json"
_STDIO_KEYS = {"type", "command", "args", "env", "cwd", "timeoutMs", "disabled"}
_HTTP_KEYS = {"type", "url", "headers", "timeoutMs", "disabled"}


@dataclass(frozen=True)
class ServerConfig:
    name: str
    source: McpSource
    transport: Transport
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    """May hold a bearer token: never shown (``describe`` names only the header keys)."""
    timeout_s: float = DEFAULT_TIMEOUT_S
    disabled: bool = False

    def describe(self) -> str:
        """What the server runs or reaches, exactly (the approval question shows it)."""
        if self.transport == "stdio":
            line = shlex.join([self.command, *self.args])
            if self.env:
                line = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items()) + " " + line
            return line
        keys = f" (headers: {', '.join(sorted(self.headers))})" if self.headers else ""
        return f"{self.transport} {self.url}{keys}"

    def identity(self) -> str:
        """What an approval remembers: the name and everything that is run or reached
        (headers included by value would store tokens, so only their names)."""
        return json.dumps(
            [
                self.name,
                self.transport,
                self.command,
                list(self.args),
                dict(self.env),
                self.cwd,
                self.url,
                sorted(self.headers),
            ],
            sort_keys=True,
        )


def _strings(value: Any, where: str, problems: list[str]) -> dict[str, str] | None:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        problems.append(f"{where} must be an object of strings")
        return None
    return dict(value)


def parse_server(name: Any, raw: Any, source: McpSource, where: str) -> ServerConfig | str:
    """One entry, or the sentence that says what is wrong with it."""
    at = f"{where}.{name}"
    if not isinstance(name, str) or not name.strip():
        return f"{where}: a server name must be a non-empty string"
    if not isinstance(raw, Mapping):
        return f"{at} must be an object"
    kind = raw.get("type", "http" if "url" in raw and "command" not in raw else "stdio")
    if kind == "streamable-http" or kind == "streamableHttp":
        kind = "http"
    if kind not in TRANSPORTS:
        return f"{at}.type must be one of {', '.join(TRANSPORTS)} (got {kind!r})"
    known = _STDIO_KEYS if kind == "stdio" else _HTTP_KEYS
    unknown = sorted(str(key) for key in raw if key not in known)
    if unknown:
        return f"{at}: {', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not a setting of a {kind} server; known: {', '.join(sorted(known))}"
    timeout = raw.get("timeoutMs")
    if timeout is not None and (
        not isinstance(timeout, int) or isinstance(timeout, bool) or timeout <= 0
    ):
        return f"{at}.timeoutMs must be a positive whole number of milliseconds"
    disabled = raw.get("disabled", False)
    if not isinstance(disabled, bool):
        return f"{at}.disabled must be true or false"
    common: dict[str, Any] = {
        "name": name,
        "source": source,
        "transport": kind,
        "timeout_s": timeout / 1000 if timeout else DEFAULT_TIMEOUT_S,
        "disabled": disabled,
    }
    problems: list[str] = []
    if kind == "stdio":
        command = raw.get("command")
        if not isinstance(command, str) or not command.strip():
            return f"{at}.command must be a non-empty string (the program to run)"
        args = raw.get("args", [])
        if (
            not isinstance(args, Sequence)
            or isinstance(args, str)
            or not all(isinstance(a, str) for a in args)
        ):
            return f"{at}.args must be a list of strings"
        env = _strings(raw.get("env"), f"{at}.env", problems)
        cwd = raw.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            return f"{at}.cwd must be a path"
        if env is None:
            return problems[0]
        return ServerConfig(command=command, args=tuple(args), env=env, cwd=cwd, **common)
    url = raw.get("url")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        return f"{at}.url must be an http:// or https:// URL"
    headers = _strings(raw.get("headers"), f"{at}.headers", problems)
    if headers is None:
        return problems[0]
    return ServerConfig(url=url, headers=headers, **common)


def parse_servers(raw: Any, source: McpSource, where: str) -> tuple[list[ServerConfig], list[str]]:
    """Every well-formed entry of an ``mcpServers`` object, and a sentence per bad one.
    A whole file's object (``{"mcpServers": {...}}``) is accepted as well."""
    if raw is None:
        return [], []
    if isinstance(raw, Mapping) and set(raw) == {"mcpServers"}:
        raw = raw["mcpServers"]
        where = f"{where}.mcpServers"
    if not isinstance(raw, Mapping):
        return [], [f"{where} must be an object of servers by name"]
    servers: list[ServerConfig] = []
    problems: list[str] = []
    for name, entry in raw.items():
        parsed = parse_server(name, entry, source, where)
        if isinstance(parsed, str):
            problems.append(parsed)
        else:
            servers.append(parsed)
    return servers, problems


def read_workspace_file(root: Path) -> tuple[list[ServerConfig], list[str]]:
    """``.mcp.json`` at a folder's root (Claude Code's project scope), or nothing."""
    path = root / WORKSPACE_FILE
    try:
        data = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return [], []
    except (OSError, ValueError) as exc:
        return [], [f"{path} cannot be read as JSON: {exc}"]
    if not isinstance(data, Mapping):
        return [], [f"{path} must hold a JSON object"]
    return parse_servers(data.get("mcpServers", {}), "workspace", str(path))


def choose(configs: Sequence[ServerConfig]) -> tuple[list[ServerConfig], list[str]]:
    """One server per name: the most specific source wins (acp over workspace over
    editor over user), and a sentence says which one was set aside."""
    rank = {source: index for index, source in enumerate(MCP_SOURCES)}
    chosen: dict[str, ServerConfig] = {}
    notes: list[str] = []
    for config in configs:
        old = chosen.get(config.name)
        if old is None:
            chosen[config.name] = config
            continue
        win, lose = (config, old) if rank[config.source] >= rank[old.source] else (old, config)
        chosen[config.name] = win
        notes.append(
            f"MCP server {config.name!r} is configured in both the {lose.source} and the "
            f"{win.source} settings: the {win.source} one is used"
        )
    return list(chosen.values()), notes


def _pairs(value: Any, where: str) -> dict[str, str] | str:
    """ACP's ``[{name, value}]`` lists (``env``, ``headers``) as a mapping."""
    if value is None:
        return {}
    if not isinstance(value, list):
        return f"{where} must be a list of {{name, value}}"
    out: dict[str, str] = {}
    for item in value:
        if not (
            isinstance(item, Mapping)
            and isinstance(item.get("name"), str)
            and isinstance(item.get("value"), str)
        ):
            return f"{where} must be a list of {{name, value}} strings"
        out[item["name"]] = item["value"]
    return out


def parse_acp_servers(raw: Any) -> tuple[list[ServerConfig], list[str]]:
    """ACP's ``mcpServers`` (``session/new``, ``session/load``): a list of
    ``{name, command, args, env: [{name, value}]}`` or ``{type: "http"|"sse", name,
    url, headers: [{name, value}]}``."""
    if raw is None:
        return [], []
    if not isinstance(raw, list):
        return [], ["mcpServers must be a list"]
    servers: list[ServerConfig] = []
    problems: list[str] = []
    for index, item in enumerate(raw):
        where = f"mcpServers[{index}]"
        if not isinstance(item, Mapping):
            problems.append(f"{where} must be an object")
            continue
        entry = {k: v for k, v in item.items() if k not in ("name", "_meta")}
        for key in ("env", "headers"):
            if key in entry:
                pairs = _pairs(entry[key], f"{where}.{key}")
                if isinstance(pairs, str):
                    problems.append(pairs)
                    break
                entry[key] = pairs
        else:
            parsed = parse_server(item.get("name"), entry, "acp", "mcpServers")
            if isinstance(parsed, str):
                problems.append(parsed)
            else:
                servers.append(parsed)
    return servers, problems
