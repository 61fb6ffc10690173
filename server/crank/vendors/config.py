"""Provider configuration: where the model comes from and how to reach it.

Resolution follows protocol.md "Lifecycle", field by field: each field comes from the
first layer that sets it, in the order explicit settings (initialization options, then
the ``crank`` configuration section, passed in as provider dicts), the user config file
(``{"provider": {...}}`` in ``user_config_dir("crank")/config.json``), then the
environment. An API key is held in a ``Secret`` whose ``repr``/``str`` never show it.
With nothing usable configured, ``ConfigError`` (protocol code 1004) says exactly what
to set.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import platformdirs

NO_PROVIDER = 1004
APIS = ("anthropic", "openai", "scripted")
DEFAULT_BASE_URLS = {
    "anthropic": "https://api.anthropic.com",
    "openai": "https://api.openai.com/v1",
}
DEFAULT_MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4.1"}

_STRING_KEYS = ("api", "baseUrl", "model", "apiKey")
_INT_KEYS = (
    "contextWindow",
    "maxOutputTokens",
    "connectTimeoutMs",
    "readTimeoutMs",
    "maxRetries",
    "retryBaseDelayMs",
    "maxRetryDelayMs",
    "thinkingBudget",
)


class Secret:
    """A string that will not print itself. ``reveal()`` is the only way to read it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


class ConfigError(Exception):
    """The provider cannot be configured; ``code`` is the protocol error code."""

    def __init__(self, message: str, code: int = NO_PROVIDER) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class ProviderConfig:
    api: str
    model: str
    base_url: str
    api_key: Secret | None = None
    context_window: int | None = None
    max_output_tokens: int | None = None
    connect_timeout: float = 10.0
    read_timeout: float = 120.0
    """Longest silence tolerated mid-stream (Anthropic pings every few seconds)."""
    max_retries: int = 3
    retry_base_delay: float = 1.0
    max_retry_delay: float = 60.0
    """A ``Retry-After`` longer than this ends the reply as an error instead of waiting."""
    thinking_budget: int | None = None
    sources: dict[str, str] = field(default_factory=dict)
    """Which layer each field came from (for diagnostics; never holds a value)."""

    def public(self) -> dict[str, Any]:
        """A JSON-safe description with no secret in it, for state and logs."""
        return {
            "api": self.api,
            "model": self.model,
            "baseUrl": without_credentials(self.base_url),
            "hasApiKey": self.api_key is not None,
        }


def without_credentials(url: str | None) -> str | None:
    """A URL with any ``user:password@`` taken out, for showing it."""
    if url is None:
        return None
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]))


def default_config_file() -> Path:
    return Path(platformdirs.user_config_dir("crank")) / "config.json"


def _how_to_configure(config_file: Path) -> str:
    """What to set, one way per line, the command line's first: the same text reaches
    ``crank run`` on stderr and an editor as an error message."""
    return (
        "No model provider is configured. Set one of these:\n"
        "  ANTHROPIC_API_KEY=...                        Anthropic (CRANK_MODEL picks the model)\n"
        "  OPENAI_API_KEY=... CRANK_MODEL=gpt-4o        OpenAI\n"
        "  OPENAI_BASE_URL=http://localhost:11434/v1 CRANK_MODEL=qwen3\n"
        "                                               a local server (Ollama, llama.cpp, "
        "vLLM, LM Studio)\n"
        f'  {config_file}: {{"provider": {{"api": "openai", "baseUrl": "...", '
        '"model": "..."}}\n'
        '  in an editor: the "crank.provider" setting (or initializationOptions.crank.provider)\n'
        "With more than one key set, CRANK_PROVIDER=anthropic|openai chooses.\n"
        "Every setting is described in docs/vendors.md."
    )


def _validated(layer: Mapping[str, Any], where: str) -> dict[str, Any]:
    if not isinstance(layer, Mapping):
        raise ConfigError(f"{where}: provider must be an object, got {type(layer).__name__}")
    out: dict[str, Any] = {}
    for key, value in layer.items():
        if value is None:
            continue
        if key in _STRING_KEYS:
            if not isinstance(value, str):
                raise ConfigError(f"{where}: provider.{key} must be a string")
            if value == "":
                continue
        elif key in _INT_KEYS:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"{where}: provider.{key} must be a non-negative integer")
        else:
            known = ", ".join(_STRING_KEYS + _INT_KEYS)
            raise ConfigError(f"{where}: unknown provider key {key!r} (known: {known})")
        out[key] = value
    if "api" in out and out["api"] not in APIS:
        raise ConfigError(
            f"{where}: provider.api must be one of {', '.join(APIS)}, got {out['api']!r}"
        )
    return out


def _file_layer(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the config file: {error}") from error
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"{path}: not valid JSON ({error})") from error
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the config file must hold a JSON object")
    provider = data.get("provider", {})
    return _validated(provider, str(path))


def _env_layer(env: Mapping[str, str], api: str | None) -> dict[str, Any]:
    layer: dict[str, Any] = {}
    if env.get("CRANK_PROVIDER"):
        layer["api"] = env["CRANK_PROVIDER"]
    if env.get("CRANK_MODEL"):
        layer["model"] = env["CRANK_MODEL"]
    chosen = api or layer.get("api")
    if chosen is None:
        if env.get("ANTHROPIC_API_KEY"):
            chosen = "anthropic"
        elif env.get("OPENAI_API_KEY") or env.get("OPENAI_BASE_URL"):
            chosen = "openai"
    prefix = {"anthropic": "ANTHROPIC", "openai": "OPENAI"}.get(chosen or "")
    if prefix is not None:
        layer.setdefault("api", chosen)
        if env.get(f"{prefix}_API_KEY"):
            layer["apiKey"] = env[f"{prefix}_API_KEY"]
        if env.get(f"{prefix}_BASE_URL"):
            layer["baseUrl"] = env[f"{prefix}_BASE_URL"]
    return _validated(layer, "environment")


def resolve_provider(
    *explicit: Mapping[str, Any] | None,
    config_file: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> ProviderConfig:
    """Resolve the provider from explicit dicts (highest first), the file, the env.

    ``explicit`` are provider objects (``initializationOptions.crank.provider``, then
    the ``crank`` section's ``provider``); ``None`` entries are skipped. ``env``
    defaults to an empty mapping so that tests never read the real environment by
    accident; the caller passes ``os.environ``.
    """
    path = config_file if config_file is not None else default_config_file()
    layers: list[tuple[str, dict[str, Any]]] = []
    for number, layer in enumerate(explicit):
        if layer is not None:
            layers.append((f"settings[{number}]", _validated(layer, f"settings[{number}]")))
    layers.append((str(path), _file_layer(path)))
    api = next((values["api"] for _, values in layers if "api" in values), None)
    layers.append(("environment", _env_layer(env or {}, api)))

    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for name, values in layers:
        for key, value in values.items():
            if key not in merged:
                merged[key] = value
                sources[key] = name
    if "api" not in merged:
        raise ConfigError(_how_to_configure(path))
    return _build(merged, sources, path)


def _build(merged: dict[str, Any], sources: dict[str, str], path: Path) -> ProviderConfig:
    api = merged["api"]
    if api == "scripted":
        return ProviderConfig(
            api="scripted", model=merged.get("model", "scripted"), base_url="", sources=sources
        )
    default_url = DEFAULT_BASE_URLS[api]
    base_url = str(merged.get("baseUrl", default_url)).rstrip("/")
    key = merged.get("apiKey")
    if key is None and base_url == default_url.rstrip("/"):
        variable = "ANTHROPIC_API_KEY" if api == "anthropic" else "OPENAI_API_KEY"
        raise ConfigError(
            f"The {api} provider at {base_url} needs an API key: set provider.apiKey or "
            f"{variable}.\n" + _how_to_configure(path)
        )
    model = merged.get("model")
    if model is None:
        if base_url != default_url.rstrip("/") and api == "openai":
            raise ConfigError(
                f"The OpenAI-compatible server at {base_url} needs a model name: set "
                "provider.model or CRANK_MODEL (e.g. the name `ollama list` shows)."
            )
        model = DEFAULT_MODELS[api]
    ms = 1000.0
    return ProviderConfig(
        api=api,
        model=model,
        base_url=base_url,
        api_key=Secret(key) if key is not None else None,
        context_window=merged.get("contextWindow") or None,
        max_output_tokens=merged.get("maxOutputTokens") or None,
        connect_timeout=merged.get("connectTimeoutMs", 10_000) / ms,
        read_timeout=merged.get("readTimeoutMs", 120_000) / ms,
        max_retries=merged.get("maxRetries", 3),
        retry_base_delay=merged.get("retryBaseDelayMs", 1000) / ms,
        max_retry_delay=merged.get("maxRetryDelayMs", 60_000) / ms,
        thinking_budget=merged.get("thinkingBudget") or None,
        sources=sources,
    )
