"""Windows kept per (base URL, served model), the picker's entries, discovery from a
base URL alone, and the "cannot call tools" notice (issue 29). Against the loopback
server, which answers ``/v1/models``, ``/props`` and chat completions over real HTTP."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from tests.support.model_server import ModelServer
from vendor_helpers import FIXTURES, MakeModel, collect, done_message, simple_request

from crank.agent.model import take_notices
from crank.vendors import ProviderConfig, discover
from crank.vendors.openai import OpenAIModel
from crank.vendors.windows import WindowCache
from crank.workspace.provider import ModelConfig
from crank.workspace.settings import Settings

TOOLS = [{"name": "read", "description": "Read a file", "parameters": {"type": "object"}}]
REFUSAL = {
    "status": 400,
    "errorMessage": "Requested tokens (5000) exceed context window of 4096",
}


def local(server: ModelServer, model: str, cache: WindowCache) -> OpenAIModel:
    config = ProviderConfig(
        api="openai", model=model, base_url=server.url + "/v1", retry_base_delay=0.01
    )
    return OpenAIModel(config, windows=cache)


async def test_a_learned_window_is_kept_per_server_and_model(
    server: ModelServer, tmp_path: Path
) -> None:
    """Learned from the first refusal, then known at once by the next model object for
    the same server and model (a restart, a switch back), and for the one model the
    server serves under its own name."""
    cache = WindowCache(tmp_path / "windows.json")
    server.routes["/v1/models"] = {"data": [{"id": "smollm2"}]}
    first = local(server, "any-name", cache)
    await discover(first)
    assert first.context_window == 8192
    server.add(REFUSAL)
    await collect(first)
    assert first.context_window == 4096
    assert local(server, "any-name", cache).context_window == 4096, "after a restart"
    assert local(server, "smollm2", cache).context_window == 4096, "the served id too"
    other = ProviderConfig(api="openai", model="any-name", base_url="http://127.0.0.1:9/v1")
    assert OpenAIModel(other, windows=cache).context_window == 8192, "another server"


def test_a_corrupt_cache_file_is_an_empty_cache(tmp_path: Path) -> None:
    path = tmp_path / "windows.json"
    path.write_text("{not json", "utf-8")
    cache = WindowCache(path)
    assert cache.get("http://h/v1", "m") is None
    cache.put("http://h/v1", "m", 2048)
    assert WindowCache(path).get("http://h/v1", "m") == 2048


async def test_the_picker_lists_the_served_model_once_with_its_window(
    server: ModelServer, tmp_path: Path
) -> None:
    """The configured name and the one served model are the same model: one entry,
    at the learned window (the picker showed it twice, at 8,192 beside 4,096)."""
    server.routes["/v1/models"] = {"data": [{"id": "smollm2"}]}
    settings = Settings(
        provider_layers=({"api": "openai", "baseUrl": server.url + "/v1", "model": "any"},)
    )
    config = ModelConfig(settings, tmp_path, env={}, log=print)
    model = config.configure()
    assert isinstance(model, OpenAIModel)
    model.set_context_window(4096)
    listed = (await config.models_json(model))["models"]
    ours = [m for m in listed if m["source"] != "catalog"]
    assert ours == [{"api": "openai", "id": "smollm2", "contextWindow": 4096, "source": "server"}]
    await model.aclose()  # type: ignore[attr-defined]


async def test_a_base_url_alone_finds_the_one_served_model(
    server: ModelServer, tmp_path: Path
) -> None:
    server.routes["/v1/models"] = {"data": [{"id": "smollm2", "meta": {"n_ctx": 4096}}]}
    settings = Settings(provider_layers=({"api": "openai", "baseUrl": server.url + "/v1"},))
    config = ModelConfig(settings, tmp_path, env={}, log=print)
    config.configure()
    assert config.error is not None and "needs a model name" in config.error
    listed = (await config.models_json(config.configure()))["models"]
    assert [m["id"] for m in listed if m["source"] == "server"] == ["smollm2"]
    found = await config.discover_model()
    assert found is not None and config.error is None
    model, line = found
    assert model.id == "smollm2" and "the one model" in line
    await discover(model)
    assert model.context_window == 4096, "from llama-server's /v1/models meta.n_ctx"


async def test_several_served_models_are_named_in_the_error(
    server: ModelServer, tmp_path: Path
) -> None:
    server.routes["/v1/models"] = {"data": [{"id": "a"}, {"id": "b"}]}
    settings = Settings(provider_layers=({"api": "openai", "baseUrl": server.url + "/v1"},))
    config = ModelConfig(settings, tmp_path, env={}, log=print)
    config.configure()
    assert await config.discover_model() is None
    assert config.error is not None and "a, b" in config.error
    assert "baseUrl" not in config.error, "the base URL is set: only the model is missing"


async def test_a_template_without_tools_is_said_before_the_first_reply(
    server: ModelServer, make_model: MakeModel
) -> None:
    """llama-server says in /props whether its chat template can call tools."""
    server.routes["/v1/models"] = {"data": [{"id": "m"}]}
    server.routes["/props"] = {
        "default_generation_settings": {"n_ctx": 4096},
        "chat_template_caps": {"supports_tools": False, "supports_tool_calls": False},
    }
    model = make_model("openai", model="m", api_key=None)
    await discover(model)
    ((kind, message),) = take_notices(model)
    assert kind == "tools_unsupported"
    assert message.startswith("this server cannot call tools: the agent can only talk")
    assert take_notices(model) == [], "said once"


async def test_discoveries_at_once_say_a_template_without_tools_once(
    server: ModelServer, make_model: MakeModel
) -> None:
    """ACP's session/new asks for the models and the window together: they wait on one
    discovery, so the template is judged (and the user told) once."""
    server.routes["/v1/models"] = {"data": [{"id": "m"}]}
    server.routes["/props"] = {
        "default_generation_settings": {"n_ctx": 4096},
        "chat_template_caps": {"supports_tools": False, "supports_tool_calls": False},
    }
    model = make_model("openai", model="m", api_key=None)
    await asyncio.gather(discover(model), discover(model), discover(model))
    assert [kind for kind, _ in take_notices(model)] == ["tools_unsupported"]


async def test_a_server_that_ignores_tools_is_told_from_its_first_reply(
    server: ModelServer, make_model: MakeModel
) -> None:
    server.add(
        {"text": "Use `read` like this:\n```python\nopen('a.py').read()\n```"},
        {"text": "```more code```"},
    )
    model = make_model("openai", model="m", api_key=None)
    await collect(model, simple_request(tools=TOOLS))
    ((kind, _message),) = take_notices(model)
    assert kind == "tools_unsupported"
    await collect(model, simple_request(tools=TOOLS))
    assert take_notices(model) == [], "judged once, said once"


async def test_a_server_that_calls_a_tool_is_not_told_anything(
    server: ModelServer, make_model: MakeModel
) -> None:
    server.add({"toolCalls": [{"name": "read", "arguments": {"path": "a.py"}}]})
    model = make_model("openai", model="m", api_key=None)
    await collect(model, simple_request(tools=TOOLS))
    assert take_notices(model) == []


async def test_vllm_refusing_auto_tool_choice_is_said_and_the_request_goes_again(
    server: ModelServer, make_model: MakeModel
) -> None:
    """vLLM started without --enable-auto-tool-choice refuses ``tool_choice: auto``
    (the text as vLLM's issue tracker quotes it; vLLM cannot run here)."""
    server.add(
        {
            "status": 400,
            "errorMessage": '"auto" tool choice requires --enable-auto-tool-choice and '
            "--tool-call-parser to be set",
        },
        {"text": "ok"},
    )
    model = make_model("openai", model="m", api_key=None)
    await collect(model, simple_request(tools=TOOLS))
    first, second = (r["body"] for r in server.requests)
    assert first["tool_choice"] == "auto" and "tool_choice" not in second
    ((kind, message),) = take_notices(model)
    assert kind == "tools_unsupported" and "enable-auto-tool-choice" in message


@pytest.mark.parametrize(
    "fixture", ["ollama_tool_call.sse", "vllm_reasoning_two_calls.sse", "lmstudio_tool_call.sse"]
)
async def test_recorded_tool_calls_of_servers_we_cannot_run(
    server: ModelServer, make_model: MakeModel, fixture: str
) -> None:
    """Ollama, vLLM and LM Studio cannot run here: their streams, written to the shape
    their docs and issues show (``fixtures/servers/README.md`` names each source), are
    replayed through the loopback server. The request carries ``tool_choice`` and a
    bounded ``max_tokens``; the calls come back; nothing says tools are unsupported."""
    server.add({"rawFile": str(FIXTURES / "servers" / fixture)})
    model = make_model("openai", model="m", api_key=None)
    events = await collect(model, simple_request(tools=TOOLS))
    message = done_message(events)
    assert any(block["type"] == "toolCall" for block in message["content"])
    body = server.requests[0]["body"]
    assert body["tool_choice"] == "auto" and 16 <= body["max_tokens"] <= 4096
    assert take_notices(model) == []


async def test_a_silent_stream_answered_unstreamed_means_the_server_handles_tools(
    server: ModelServer, make_model: MakeModel, tmp_path: Path
) -> None:
    """llama-cpp-python with a function-calling chat format streams nothing for a
    request with tools (recorded bytes: ``fixtures/llama_cpp/auto_stream.sse``), and
    answers it unstreamed: even a prose answer with code then is no reason to say the
    server cannot call tools."""
    prose = {
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Use `read`:\n```\nprint(1)\n```"},
                "finish_reason": "stop",
            }
        ],
    }
    answer = tmp_path / "prose.json"
    answer.write_text(json.dumps(prose), "utf-8")
    server.add(
        {"rawFile": str(FIXTURES / "llama_cpp" / "auto_stream.sse")}, {"bodyFile": str(answer)}
    )
    model = make_model("openai", model="smollm2", api_key=None)
    await collect(model, simple_request(tools=TOOLS))
    assert take_notices(model) == []
