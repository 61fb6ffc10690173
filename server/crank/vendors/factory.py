"""``create_model``: a configured provider in, a ``Model`` out."""

from __future__ import annotations

import httpx

from crank.agent.model import Model

from .anthropic import AnthropicModel
from .config import ConfigError, ProviderConfig
from .openai import OpenAIModel
from .served import ServedModel
from .transport import StreamingModel
from .windows import WindowCache


def create_model(config: ProviderConfig, *, client: httpx.AsyncClient | None = None) -> Model:
    """The HTTP model for ``config.api``.

    ``scripted`` is refused here on purpose: the caller supplies the scripted model
    (``crank.agent``), since only it knows the script.
    """
    model: StreamingModel
    if config.api == "anthropic":
        model = AnthropicModel(config, client=client)
    elif config.api == "openai":
        model = OpenAIModel(config, client=client, windows=WindowCache())
    elif config.api == "scripted":
        raise ConfigError(
            'api "scripted" is served by the caller\'s scripted model, not by vendors'
        )
    else:
        raise ConfigError(f"unknown provider api {config.api!r} (anthropic, openai or scripted)")
    return model


async def discover(model: object, *, refresh: bool = False) -> list[ServedModel] | None:
    """Ask the model's server what it serves, and learn the window it runs the model
    with (the window once per model; the list again when ``refresh``; servers other
    than OpenAI's own). None when there is nothing to ask or the server did not say."""
    if isinstance(model, OpenAIModel):
        return await model.discover(refresh=refresh)
    return None
