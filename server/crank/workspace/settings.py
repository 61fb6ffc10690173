"""A workspace's settings, merged from the places an editor user can set them.

Order, first wins field by field: ``initializationOptions.crank``, the client's
``workspace/configuration`` section ``crank``, the user config file
(``platformdirs.user_config_dir("crank")/config.json``), then the environment (the
provider only; see crank.vendors). Anything malformed is refused by name rather than
ignored, so a typo in a setting is never silently a default.

A folder-scoped layer (the ``workspace/configuration`` answer for a folder, which in
an editor may come from that folder's own settings file, written by whoever wrote
the repository) cannot grant trust, and in a folder that is not trusted it cannot set
any ``RESTRICTED`` setting: those come only from the client-wide layers (start-up
options, pushed settings), the user config file and the environment.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from crank.mcp.config import MCP_STARTS, McpStart, ServerConfig, parse_servers
from crank.session import POLICY_NAMES, ContextSettings
from crank.tools.limits import Limits
from crank.tools.sandbox import SANDBOX_MODES, SandboxSettings
from crank.vendors.config import default_config_file

from .diagnostics import DiagnosticsSettings, diagnostics_settings
from .errors import invalid_params
from .permissions import PERMISSION_MODES, PermissionMode

_KEYS = {
    "provider",
    "sessionDir",
    "trusted",
    "permissionMode",
    "context",
    "sandbox",
    "diagnostics",
    "mcpServers",
    "mcpTrustReadOnlyHints",
    "mcpStartupWaitMs",
    "mcpStart",
}
_CONTEXT_KEYS = {
    "policy": "policy",
    "reserveTokens": "reserve_tokens",
    "keepRecentTokens": "keep_recent_tokens",
    "clearAtTokens": "clear_at_tokens",
}
RESTRICTED = (
    "trusted",
    "permissionMode",
    "sessionDir",
    "sandbox",
    "provider.api",
    "provider.baseUrl",
    "provider.apiKey",
    "provider.script",
    "mcpServers",
    "mcpTrustReadOnlyHints",
    "provider.model",
    "provider.maxOutputTokens",
    "provider.thinkingBudget",
)
"""Settings that lower safety, send the user's traffic (and key) or transcripts
somewhere else, or choose what the user's key pays for (the model, how much it may
write or think per reply). ``sandbox`` covers every sandbox setting (``sandbox.mode``, ...)."""


@dataclass(frozen=True)
class Settings:
    provider_layers: tuple[dict[str, Any], ...] = ()
    """Provider objects, highest first, without ``script`` (kept apart below)."""
    script: str | None = None
    """The scripted provider's reply file (``provider.script``)."""
    session_dir: str | None = None
    trusted: bool = False
    permission_mode: PermissionMode = "ask"
    context: ContextSettings = field(default_factory=ContextSettings)
    """Compaction and request-view policies (``context: {policy, reserveTokens, ...}``)."""
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    """How commands are confined (``sandbox: {mode, network}``; crank.tools.sandbox)."""
    mcp_servers: tuple[ServerConfig, ...] = ()
    """MCP servers from the editor (``crank.mcpServers``; the first layer naming a
    server wins) then the user config file's ``mcpServers``, each with its source."""
    mcp_trust_read_only: bool = False
    """``mcpTrustReadOnlyHints``: a tool whose server says ``readOnlyHint`` runs without
    asking (and is offered in read-only mode). Off unless the user says so."""
    mcp_startup_wait_ms: int = 5000
    """``mcpStartupWaitMs``: the longest a prompt waits for MCP servers still starting."""
    mcp_start: McpStart = "open"
    """``mcpStart``: servers start when the workspace opens, or at its first prompt."""
    problems: tuple[str, ...] = field(default=())
    """Settings that were refused, one sentence each, for the log."""
    diagnostics: DiagnosticsSettings = field(default_factory=DiagnosticsSettings)
    """The editor's diagnostics after an edit (``diagnostics: {enabled, settleMs}``)."""


def _checked(layer: Any, where: str) -> dict[str, Any]:
    if layer is None:
        return {}
    if not isinstance(layer, Mapping):
        raise invalid_params(where, "must be an object")
    out: dict[str, Any] = {}
    for key, value in layer.items():
        if key not in _KEYS:
            continue  # other components' settings live in the same section
        name = f"{where}.{key}"
        if key == "provider" and value is not None and not isinstance(value, Mapping):
            raise invalid_params(name, "must be an object")
        if key == "sessionDir" and value is not None and not isinstance(value, str):
            raise invalid_params(name, "must be a string")
        if key == "trusted" and value is not None and not isinstance(value, bool):
            raise invalid_params(name, "must be true or false")
        if key == "permissionMode" and value is not None and value not in PERMISSION_MODES:
            raise invalid_params(name, f"must be one of {', '.join(PERMISSION_MODES)}")
        if key == "context" and value is not None:
            value = _context(value, name)
        if key == "sandbox" and value is not None:
            value = _sandbox(value, name)
        if key == "diagnostics" and value is not None:
            value = diagnostics_settings(value, name)
        if key == "mcpServers" and value is not None and not isinstance(value, Mapping):
            raise invalid_params(name, "must be an object of servers by name")
        if key == "mcpTrustReadOnlyHints" and value is not None and not isinstance(value, bool):
            raise invalid_params(name, "must be true or false")
        if (
            key == "mcpStartupWaitMs"
            and value is not None
            and (not isinstance(value, int) or isinstance(value, bool) or value < 0)
        ):
            raise invalid_params(name, "must be a whole number of milliseconds")
        if key == "mcpStart" and value is not None and value not in MCP_STARTS:
            raise invalid_params(name, f"must be one of {', '.join(MCP_STARTS)}")
        if value is not None:
            out[key] = dict(value) if key == "provider" else value
    return out


def _context(value: Any, where: str) -> ContextSettings:
    if not isinstance(value, Mapping):
        raise invalid_params(where, "must be an object")
    fields: dict[str, Any] = {}
    for key, raw in value.items():
        if key not in _CONTEXT_KEYS:
            raise invalid_params(
                f"{where}.{key}", f"is not a setting; known: {', '.join(_CONTEXT_KEYS)}"
            )
        if key == "policy":
            if raw not in POLICY_NAMES:
                raise invalid_params(f"{where}.policy", f"must be one of {', '.join(POLICY_NAMES)}")
        elif raw is not None and (not isinstance(raw, int) or isinstance(raw, bool) or raw < 0):
            raise invalid_params(f"{where}.{key}", "must be a whole number of tokens")
        if raw is not None:
            fields[_CONTEXT_KEYS[key]] = raw
    return ContextSettings(**fields)


def _sandbox(value: Any, where: str) -> SandboxSettings:
    if not isinstance(value, Mapping):
        raise invalid_params(where, "must be an object")
    for key in value:
        if key not in ("mode", "network", "env", "limits"):
            raise invalid_params(
                f"{where}.{key}", "is not a setting; known: mode, network, env, limits"
            )
    mode = value.get("mode", SandboxSettings.mode)
    if mode not in SANDBOX_MODES:
        raise invalid_params(f"{where}.mode", f"must be one of {', '.join(SANDBOX_MODES)}")
    network = value.get("network", False)
    if not isinstance(network, bool):
        raise invalid_params(f"{where}.network", "must be true or false")
    env = value.get("env", [])
    if not isinstance(env, list) or not all(isinstance(name, str) and name for name in env):
        raise invalid_params(f"{where}.env", "must be a list of environment variable names")
    return SandboxSettings(
        mode=mode, network=network, env=tuple(env), limits=_limits(value.get("limits"), where)
    )


def _limits(value: Any, where: str) -> Limits:
    """``sandbox.limits``: ``{processes, memoryMB}``, each a positive integer."""
    if value is None:
        return Limits()
    if not isinstance(value, Mapping):
        raise invalid_params(f"{where}.limits", "must be an object")
    fields: dict[str, int] = {}
    for key, name in (("processes", "processes"), ("memoryMB", "memory_mb")):
        raw = value.get(key)
        if raw is None:
            continue
        if not isinstance(raw, int) or isinstance(raw, bool) or raw < 1:
            raise invalid_params(f"{where}.limits.{key}", "must be a positive integer")
        fields[name] = raw
    unknown = set(value) - {"processes", "memoryMB"}
    if unknown:
        raise invalid_params(
            f"{where}.limits.{sorted(unknown)[0]}", "is not a limit; known: processes, memoryMB"
        )
    return Limits(**fields)


def read_config_file(path: Path | None = None) -> dict[str, Any]:
    """The user config file's top level, or {} when there is none."""
    path = path if path is not None else default_config_file()
    try:
        data = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise invalid_params(str(path), f"cannot be read as JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise invalid_params(str(path), "must hold a JSON object")
    return data


def merge_settings(init_options: Any, section: Any, *, config_file: Path | None = None) -> Settings:
    """Settings from ``initializationOptions.crank``, the ``crank`` section and the
    user config file. The provider's remaining layers (file, environment) are merged
    later by ``crank.vendors.resolve_provider``."""
    layers = [
        ("initializationOptions.crank", init_options),
        ("workspace/configuration crank", section),
    ]
    return merge_layers(layers, config_file=config_file)


def _unrestricted(raw: Any) -> tuple[Any, list[str]]:
    """``raw`` without the ``RESTRICTED`` settings, and the names of those it had."""
    if not isinstance(raw, Mapping):
        return raw, []
    kept = {key: value for key, value in raw.items() if key not in RESTRICTED}
    dropped = [key for key in raw if key in RESTRICTED and raw[key] is not None]
    provider = raw.get("provider")
    if isinstance(provider, Mapping):
        kept["provider"] = {
            key: value for key, value in provider.items() if f"provider.{key}" not in RESTRICTED
        }
        dropped += [
            f"provider.{key}"
            for key, value in provider.items()
            if f"provider.{key}" in RESTRICTED and value is not None
        ]
    return kept, dropped


def _value_at(raw: Any, dotted: str) -> Any:
    """The value of ``dotted`` (``provider.baseUrl``) in a crank section, or None."""
    for part in dotted.split("."):
        if not isinstance(raw, Mapping):
            return None
        raw = raw.get(part)
    return raw


def _set_alike(dotted: str, raw: Any, others: Sequence[Any]) -> bool:
    """Whether one of ``others`` gives ``dotted`` the same value as ``raw`` does."""
    value = _value_at(raw, dotted)
    return any(_value_at(other, dotted) == value for other in others)


def merge_layers(
    named: Sequence[tuple[str, Any]],
    *,
    config_file: Path | None = None,
    folder_scoped: Collection[str] = (),
) -> Settings:
    """Client layers ``(where, crank section)``, highest first, then the user config
    file. ``where`` names the layer in the error for a malformed value. The server
    puts the settings of ``workspace/didChangeConfiguration`` first: a change the user
    just made (granting Workspace Trust) wins over the options the editor started with.

    Layers whose ``where`` is in ``folder_scoped`` may withdraw trust but never grant
    it, and unless the folder ends up trusted their ``RESTRICTED`` settings are left
    out (named in ``problems``) before anything else is read from them.
    """
    folder = [where in folder_scoped for where, _raw in named]
    layers = [{} if where in folder_scoped else _checked(raw, where) for where, raw in named]
    file_layer = read_config_file(config_file)
    file_values = {k: v for k, v in file_layer.items() if k in _KEYS and k != "provider"}
    file_checked = _checked(file_values, str(config_file or default_config_file()))

    def vote(index: int) -> bool | None:
        if not folder[index]:
            return cast(bool | None, layers[index].get("trusted"))
        raw = named[index][1]
        # a folder may withdraw trust, never vouch for itself
        return False if isinstance(raw, Mapping) and raw.get("trusted") is False else None

    votes = [vote(index) for index in range(len(named))] + [file_checked.get("trusted")]
    trusted = next((answer for answer in votes if answer is not None), False)
    problems: list[str] = []
    for index, (where, raw) in enumerate(named):
        if not folder[index]:
            continue
        kept, dropped = (raw, []) if trusted else _unrestricted(raw)
        layers[index] = _checked(kept, where)
        # A value a client-wide layer sets too is used anyway (an editor that answers
        # the folder's query with the user's own settings, as Neovim does): not ignored.
        user = [value for i, (_w, value) in enumerate(named) if not folder[i]]
        dropped = [name for name in dropped if not _set_alike(name, raw, user)]
        if dropped:
            problems.append(
                f"{where}: this folder is not trusted, so its {', '.join(dropped)} "
                f"{'was' if len(dropped) == 1 else 'were'} ignored; set "
                f"{'it' if len(dropped) == 1 else 'them'} in your user settings "
                "(or the user config file), or trust the folder"
            )

    def first(key: str) -> Any:
        return next((layer[key] for layer in [*layers, file_checked] if key in layer), None)

    servers: list[ServerConfig] = []
    for (where, _raw), layer in zip(named, layers, strict=True):
        found, bad = parse_servers(layer.get("mcpServers"), "editor", f"{where}.mcpServers")
        servers += [s for s in found if all(s.name != old.name for old in servers)]
        problems += bad
    where_file = str(config_file or default_config_file())
    found, bad = parse_servers(file_checked.get("mcpServers"), "user", f"{where_file} mcpServers")
    servers += found
    problems += bad
    trust_hints = first("mcpTrustReadOnlyHints")

    providers: list[dict[str, Any]] = []
    script: str | None = None
    for (where, _raw), layer in zip(named, layers, strict=True):
        provider = dict(layer.get("provider") or {})
        raw_script = provider.pop("script", None)
        if raw_script is not None and not isinstance(raw_script, str):
            raise invalid_params(f"{where}.provider.script", "must be a path")
        script = script or raw_script
        if provider:
            providers.append(provider)
    return Settings(
        provider_layers=tuple(providers),
        script=script,
        session_dir=first("sessionDir"),
        trusted=bool(trusted),
        permission_mode=first("permissionMode") or "ask",
        context=first("context") or ContextSettings(),
        problems=tuple(problems),
        sandbox=first("sandbox") or SandboxSettings(),
        diagnostics=first("diagnostics") or DiagnosticsSettings(),
        mcp_servers=tuple(servers),
        mcp_trust_read_only=bool(trust_hints),
        mcp_startup_wait_ms=first("mcpStartupWaitMs")
        if first("mcpStartupWaitMs") is not None
        else 5000,
        mcp_start=first("mcpStart") or "open",
    )
