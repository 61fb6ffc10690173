"""Turning settings into a model: a real provider over HTTP, or the scripted one.

``api: "scripted"`` reads ``{"replies": [...]}`` from the file named by
``provider.script`` (each reply as ``crank.agent.scripted.reply_from_dict`` takes it),
for the offline demo. A missing or broken script is a 1004 saying what to fix.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from crank.agent.messages import assistant_message
from crank.agent.model import AbortSignal, Model, ModelRequest, StreamEvent
from crank.agent.scripted import ScriptedModel, reply_from_dict
from crank.vendors import ConfigError, ProviderConfig, create_model, resolve_provider
from crank.vendors.secrets import provider_env

from .settings import Settings


class Unconfigured:
    """Stands in for a model while none is configured; prompts are refused before a
    run starts (1004), so this only ever answers with the configuration error."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    @property
    def api(self) -> str:
        return "none"

    @property
    def id(self) -> str:
        return "none"

    @property
    def context_window(self) -> int:
        return 0

    async def stream(
        self, request: ModelRequest, signal: AbortSignal
    ) -> AsyncIterator[StreamEvent]:
        reply = assistant_message([], stop_reason="error", model="none", error_message=self.reason)
        yield {"type": "done", "message": reply}


def load_script(path: str, base: Path, model_id: str) -> ScriptedModel:
    """The scripted model for a reply file; relative paths resolve against ``base``."""
    file = Path(path).expanduser()
    file = file if file.is_absolute() else base / file
    try:
        data = json.loads(file.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"the scripted provider's script {file} cannot be read: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("replies"), list):
        raise ConfigError(f'the scripted provider\'s script {file} must hold {{"replies": [...]}}')
    try:
        replies = [reply_from_dict(reply) for reply in data["replies"]]
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ConfigError(f"the scripted provider's script {file}: {exc}") from exc
    return ScriptedModel(replies, id=model_id)


def build_model(
    settings: Settings,
    root: Path,
    *,
    override: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[Model, ProviderConfig]:
    """The model the settings describe. ``override`` (``{"api", "model"}``, from
    ``crank/setModel``) asks for that api's whole profile (base URL, key, window: see
    ``crank.vendors.resolve_provider``), never for the model alone on the current
    endpoint. Raises ConfigError (1004) naming what is missing."""
    config = resolve_provider(
        *settings.provider_layers,
        env=provider_env() if env is None else env,
        api=override["api"] if override else None,
        model=override["model"] if override else None,
    )
    if config.api == "scripted":
        if settings.script is None:
            raise ConfigError(
                'provider api "scripted" needs provider.script: the path of a JSON file '
                'holding {"replies": [...]}'
            )
        return load_script(settings.script, root, config.model), config
    return create_model(config), config
