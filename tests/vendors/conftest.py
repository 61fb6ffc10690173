"""Fixtures: a real loopback model server and models pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from tests.support.model_server import ModelServer
from vendor_helpers import KEY, MakeModel

from crank.vendors import AnthropicModel, OpenAIModel, ProviderConfig, Secret
from crank.vendors.transport import StreamingModel


@pytest.fixture
async def server() -> AsyncIterator[ModelServer]:
    async with ModelServer([]) as running:
        yield running


@pytest.fixture
def make_model(server: ModelServer) -> MakeModel:
    def make(api: str = "anthropic", **overrides: Any) -> StreamingModel:
        values: dict[str, Any] = {
            "api": api,
            "model": "claude-sonnet-4-5" if api == "anthropic" else "gpt-4o",
            "base_url": server.url if api == "anthropic" else server.url + "/v1",
            "api_key": Secret(KEY),
            "retry_base_delay": 0.01,
            "read_timeout": 5.0,
        }
        values.update(overrides)
        config = ProviderConfig(**values)
        return AnthropicModel(config) if api == "anthropic" else OpenAIModel(config)

    return make
