"""Asking a server for its models and its context window, each the way it says it.

The answers are shaped as each server's docs show them (sources in
``crank/vendors/served.py``); the loopback server serves them over real HTTP, and a
path it was not given is a 404, as on a server that lacks it.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.support.model_server import ModelServer
from vendor_helpers import MakeModel, collect, done_message

from crank.vendors import discover
from crank.vendors.openai import OpenAIModel

CASES: list[tuple[str, dict[str, Any], int]] = [
    ("vllm", {"/v1/models": {"data": [{"id": "m", "max_model_len": 32768}]}}, 32768),
    (
        "llama-server",
        {
            "/v1/models": {"data": [{"id": "m", "meta": {"n_ctx_train": 131072}}]},
            "/props": {"default_generation_settings": {"n_ctx": 16384}},
        },
        16384,
    ),
    (
        "lm-studio",
        {
            "/v1/models": {"data": [{"id": "m"}]},
            "/api/v0/models/m": {
                "id": "m",
                "max_context_length": 32768,
                "loaded_context_length": 4096,
            },
        },
        4096,
    ),
    (
        "ollama-num-ctx",
        {
            "/v1/models": {"data": [{"id": "m"}]},
            "/api/show": {
                "parameters": 'stop "<|im_end|>"\nnum_ctx                        12288',
                "model_info": {"qwen2.context_length": 32768},
            },
        },
        12288,
    ),
    (
        "ollama-default",
        {"/v1/models": {"data": [{"id": "m"}]}, "/api/show": {"model_info": {}}},
        4096,
    ),
    ("llama-cpp-python", {"/v1/models": {"data": [{"id": "m"}]}}, 8192),
]


@pytest.mark.parametrize(("name", "routes", "window"), CASES, ids=[c[0] for c in CASES])
async def test_the_window_each_server_reports(
    server: ModelServer, make_model: MakeModel, name: str, routes: dict[str, Any], window: int
) -> None:
    server.routes.update(routes)
    model = make_model("openai", model="m", api_key=None)
    assert isinstance(model, OpenAIModel) and model.context_window == 8192
    served = await discover(model)
    assert served is not None and [m.id for m in served] == ["m"]
    assert model.context_window == window
    await model.aclose()


async def test_ollama_tags_when_models_is_missing(
    server: ModelServer, make_model: MakeModel
) -> None:
    server.routes["/api/tags"] = {"models": [{"name": "qwen2.5-coder:7b"}, {"name": "phi4"}]}
    served = await discover(make_model("openai", model="phi4", api_key=None))
    assert served is not None and [m.id for m in served] == ["qwen2.5-coder:7b", "phi4"]


async def test_configured_window_wins_and_openai_is_never_asked(
    server: ModelServer, make_model: MakeModel
) -> None:
    server.routes["/v1/models"] = {"data": [{"id": "m", "max_model_len": 32768}]}
    model = make_model("openai", model="m", api_key=None, context_window=2000)
    await discover(model)
    assert model.context_window == 2000
    hosted = make_model("openai", base_url="https://api.openai.com/v1")
    assert await discover(hosted) is None and hosted.context_window == 128000


async def test_the_list_is_asked_again_the_window_once(
    server: ModelServer, make_model: MakeModel
) -> None:
    server.routes["/v1/models"] = {"data": [{"id": "m", "max_model_len": 32768}]}
    model = make_model("openai", model="m", api_key=None)
    await discover(model)
    server.routes["/v1/models"] = {"data": [{"id": "m"}, {"id": "new"}]}
    assert [m.id for m in (await discover(model)) or []] == ["m"], "cached without refresh"
    assert [m.id for m in (await discover(model, refresh=True)) or []] == ["m", "new"]
    assert model.context_window == 32768
    server.add({"text": "ok"})
    assert done_message(await collect(model))["content"] == [{"type": "text", "text": "ok"}]
