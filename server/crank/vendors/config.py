"""Provider configuration: where the model comes from and how to reach it.

Resolution follows protocol.md "Lifecycle": the layers are explicit settings
(initialization options, then the ``crank`` configuration section, passed in as
provider dicts), the user config file (``{"provider": {...}}`` in
``user_config_dir("crank")/config.json``), then the environment. The result is one
api's profile: a layer that names an api counts only for it, each field comes from the
first layer that counts and sets it, and a key only ever goes to the base URL of its
own layer (docs/vendors.md "Configuration"). An API key is held in a ``Secret`` whose
``repr``/``str`` never show it, and ``redact`` takes every held key out of log text.
With nothing usable configured, ``ConfigError`` (kind ``no_provider``; the frontends
give it its wire code) says exactly what to set.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Final, Literal
from urllib.parse import urlsplit, urlunsplit

import platformdirs

ConfigErrorKind = Literal["no_provider"]
"""The refusal kind of ``ConfigError`` (the frontends' error tables map it to a code)."""
NO_PROVIDER: Final = "no_provider"
APIS = ("anthropic", "openai", "scripted")
DEFAULT_BASE_URLS = {
    "anthropic": "https://api.anthropic.com",
    "openai": "https://api.openai.com/v1",
}
DEFAULT_MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4.1"}
_ENV_PREFIX = {"anthropic": "ANTHROPIC", "openai": "OPENAI"}

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
_BOOL_KEYS = ("images",)


_KNOWN_SECRETS: set[str] = set()
"""Every key this process has held (8 characters or more), for ``redact``."""
_KEY_FIELD = re.compile(
    r"""(?i)(["']?(?:api[-_]?key|x-api-key|authorization|password|secret|access[-_]?token)"""
    r"""["']?\s*[:=]\s*)(["'])[^"']*\2"""
)
_BEARER = re.compile(r"(?i)\b(bearer\s+)[\w.~+/=-]+")
_KEY_LIKE = re.compile(r"\bsk-[\w-]{12,}")


def redact(text: str) -> str:
    """``text`` with every known key, and anything shaped like one, replaced by
    ``***``: the value of an ``apiKey``/``authorization``/``password``/... field,
    a bearer token, an ``sk-...`` token. For log lines, whatever produced them."""
    for value in sorted(_KNOWN_SECRETS, key=len, reverse=True):
        if value in text:
            text = text.replace(value, "***")
    text = _KEY_FIELD.sub(lambda m: f"{m[1]}{m[2]}***{m[2]}", text)
    text = _BEARER.sub(r"\1***", text)
    return _KEY_LIKE.sub("sk-***", text)


class RedactingFormatter(logging.Formatter):
    """Formats as usual, then takes out anything key-like (``redact``): libraries log
    whole messages (pygls logs an unknown message with its params), and a traceback can
    quote a value, so the last step before a log line is written is the one that
    checks. Every entry point's log handlers use it."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class Secret:
    """A string that will not print itself. ``reveal()`` is the only way to read it.
    Every secret is remembered by ``redact``, so no log line can show it either."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value
        if len(value) >= 8:
            _KNOWN_SECRETS.add(value)

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
    """The provider cannot be configured; the message says what to set."""

    kind: ClassVar[ConfigErrorKind] = NO_PROVIDER

    def __init__(self, message: str, *, pending: ProviderConfig | None = None) -> None:
        super().__init__(message)
        self.pending = pending
        """Everything but the model name, for an OpenAI-compatible server whose
        ``/models`` can say which model it serves (``crank.vendors.served``)."""


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
    images: bool | None = None
    """Whether the model takes images (``provider.images``); None: as the catalog says."""
    sources: dict[str, str] = field(default_factory=dict)
    """Which layer each field came from (for diagnostics; never holds a value)."""
    withheld_keys: tuple[str, ...] = ()
    """Keys configured for another endpoint, which this one is never sent (described by
    where they came from, never by value)."""

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
        elif key in _BOOL_KEYS:
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: provider.{key} must be true or false")
        else:
            known = ", ".join(_STRING_KEYS + _INT_KEYS + _BOOL_KEYS)
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


def _env_hint(env: Mapping[str, str]) -> dict[str, Any]:
    """``CRANK_PROVIDER`` and ``CRANK_MODEL``: the model belongs to that api when set."""
    layer: dict[str, Any] = {}
    if env.get("CRANK_PROVIDER"):
        layer["api"] = env["CRANK_PROVIDER"]
    if env.get("CRANK_MODEL"):
        layer["model"] = env["CRANK_MODEL"]
    return _validated(layer, "environment")


def _env_endpoint(env: Mapping[str, str], api: str) -> dict[str, Any]:
    """The api's own variables: ``ANTHROPIC_*`` are only ever Anthropic's, ``OPENAI_*``
    only an OpenAI-compatible server's."""
    prefix = _ENV_PREFIX.get(api)
    if prefix is None:
        return {}
    layer: dict[str, Any] = {"api": api}
    if env.get(f"{prefix}_API_KEY"):
        layer["apiKey"] = env[f"{prefix}_API_KEY"]
    if env.get(f"{prefix}_BASE_URL"):
        layer["baseUrl"] = env[f"{prefix}_BASE_URL"]
    return _validated(layer, "environment")


def _primary_api(layers: list[tuple[str, dict[str, Any]]], env: Mapping[str, str]) -> str | None:
    """The api the configuration is for: the first layer that names one, else the one
    whose environment variables are set, else ``anthropic`` (the editor setting's
    default) for settings that give a key or a model but no base URL. A base URL with
    no api anywhere is refused: nobody can tell which protocol it speaks."""
    named = next((values["api"] for _, values in layers if "api" in values), None)
    if named is not None:
        return str(named)
    if env.get("ANTHROPIC_API_KEY") or env.get("ANTHROPIC_BASE_URL"):
        return "anthropic"
    if env.get("OPENAI_API_KEY") or env.get("OPENAI_BASE_URL"):
        return "openai"
    urls = [(name, values["baseUrl"]) for name, values in layers if "baseUrl" in values]
    if urls:
        name, url = urls[0]
        raise ConfigError(
            f"{name}: provider.baseUrl {without_credentials(url)} is set but no provider.api "
            'says what it speaks: set provider.api to "anthropic" or "openai" '
            "(or CRANK_PROVIDER)."
        )
    if any(values for _, values in layers):
        return "anthropic"
    return None


def _endpoint(api: str, url: str | None) -> str:
    """The base URL a request goes to, in the one spelling every comparison uses."""
    return str(url if url is not None else DEFAULT_BASE_URLS.get(api, "")).rstrip("/")


def resolve_provider(
    *explicit: Mapping[str, Any] | None,
    config_file: Path | None = None,
    env: Mapping[str, str] | None = None,
    api: str | None = None,
    model: str | None = None,
) -> ProviderConfig:
    """Resolve the provider from explicit dicts (highest first), the file, the env.

    ``explicit`` are provider objects (``initializationOptions.crank.provider``, then
    the ``crank`` section's ``provider``); ``None`` entries are skipped. ``env``
    defaults to an empty mapping so that tests never read the real environment by
    accident; the caller passes ``os.environ``.

    The result is one api's *profile*. A layer that names an api speaks only for that
    api; a layer that names none speaks for the primary api (see ``_primary_api``).
    ``api`` asks for another api's profile (``crank/setModel``): then only the layers
    naming it and its own environment variables count, and nothing configured for the
    primary api comes along. A key is sent only to the endpoint its own layer
    describes (that layer's ``baseUrl``, else the api's default URL): a key from one
    layer never follows a base URL set in another. ``model`` picks the model; a
    configured ``contextWindow``/``maxOutputTokens`` applies only to the configured
    model, so a different one gets its catalog figures.
    """
    path = config_file if config_file is not None else default_config_file()
    environment = env or {}
    layers: list[tuple[str, dict[str, Any]]] = []
    for number, layer in enumerate(explicit):
        if layer is not None:
            layers.append((f"settings[{number}]", _validated(layer, f"settings[{number}]")))
    layers.append((str(path), _file_layer(path)))
    layers.append(("environment", _env_hint(environment)))
    if api is not None and api not in APIS:
        raise ConfigError(f"provider api must be one of {', '.join(APIS)}, got {api!r}")
    primary = _primary_api(layers, environment)
    # Detected from ANTHROPIC_*/OPENAI_* alone: a key given with no api was not given
    # for that api (an editor's stored key is not an OpenAI key because OPENAI_BASE_URL
    # is set), so only keys that name it, or the environment's own, go out.
    env_names = [f"{p}_{v}" for p in _ENV_PREFIX.values() for v in ("API_KEY", "BASE_URL")]
    detected = not any("api" in values for _, values in layers) and any(
        environment.get(name) for name in env_names
    )
    target = api or primary
    if target is None:
        raise ConfigError(_how_to_configure(path))
    layers.append(("environment", _env_endpoint(environment, target)))

    merged: dict[str, Any] = {"api": target}
    sources: dict[str, str] = {"api": "crank/setModel" if api else "default"}
    keys: list[tuple[str, str, str]] = []
    unassigned: list[str] = []
    for name, values in layers:
        if values.get("api", primary) != target:
            continue  # configured for another api: none of it applies here
        if "api" in values and sources["api"] == "default":
            sources["api"] = name
        for key, value in values.items():
            if key == "apiKey":
                Secret(value)  # known to ``redact`` even if it is never sent
                if detected and "api" not in values:
                    unassigned.append(name)
                else:
                    keys.append((name, value, _endpoint(target, values.get("baseUrl"))))
            elif key not in merged:
                merged[key] = value
                sources[key] = name
    if model is not None:
        if merged.get("model") != model:
            merged.pop("contextWindow", None)
            merged.pop("maxOutputTokens", None)
            merged.pop("images", None)
        merged["model"] = model
        sources["model"] = "crank/setModel"
    url = _endpoint(target, merged.get("baseUrl"))
    bound = next(((name, key) for name, key, endpoint in keys if endpoint == url), None)
    if bound is not None:
        sources["apiKey"], merged["apiKey"] = bound
    withheld = tuple(  # worth saying only when no key goes out at all
        [
            f"the key from {name} (configured for {without_credentials(endpoint)})"
            for name, _key, endpoint in keys
        ]
        + [f"the key from {name} (given with no provider.api)" for name in unassigned]
        if bound is None
        else ()
    )
    return _build(merged, sources, path, withheld, switching=api is not None)


def _build(
    merged: dict[str, Any],
    sources: dict[str, str],
    path: Path,
    withheld: tuple[str, ...],
    *,
    switching: bool = False,
) -> ProviderConfig:
    api = merged["api"]
    if api == "scripted":
        return ProviderConfig(
            api="scripted", model=merged.get("model", "scripted"), base_url="", sources=sources
        )
    default_url = DEFAULT_BASE_URLS[api]
    base_url = str(merged.get("baseUrl", default_url)).rstrip("/")
    key = merged.get("apiKey")
    if key is None and base_url == default_url.rstrip("/"):
        unused = (
            f" Not sent there: {'; '.join(withheld)}, since a key goes only to the "
            "endpoint it was configured with."
            if withheld
            else ""
        )
        if switching:
            raise ConfigError(
                f"The {api} provider at {base_url} needs an API key of its own: set "
                f'{_ENV_PREFIX[api]}_API_KEY, or {{"provider": {{"api": "{api}", '
                f'"apiKey": "..."}}}} in {path}.{unused}'
            )
        raise ConfigError(
            f"The {api} provider at {base_url} needs an API key: set "
            f"{_ENV_PREFIX[api]}_API_KEY, or provider.apiKey in the same place that sets "
            f'provider.api "{api}".{unused}\n' + _how_to_configure(path)
        )
    model = merged.get("model")
    if model is None:
        if base_url != default_url.rstrip("/") and api == "openai":
            raise ConfigError(
                f"The OpenAI-compatible server at {base_url} needs a model name: set "
                "provider.model or CRANK_MODEL (e.g. the name `ollama list` shows).",
                pending=_config(merged, sources, withheld, api, "", base_url, key),
            )
        model = DEFAULT_MODELS[api]
    return _config(merged, sources, withheld, api, model, base_url, key)


def _config(
    merged: dict[str, Any],
    sources: dict[str, str],
    withheld: tuple[str, ...],
    api: str,
    model: str,
    base_url: str,
    key: str | None,
) -> ProviderConfig:
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
        images=merged.get("images"),
        sources=sources,
        withheld_keys=withheld,
    )
