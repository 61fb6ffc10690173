"""The OpenAI-compatible model against what real servers send.

``fixtures/llama_cpp/``: bytes recorded from a real llama-cpp-python server, replayed
unchanged. ``fixtures/servers/``: one reply per server family we cannot run here,
written to the shape their docs and issue trackers show (sources in its README.md).
Both go through the loopback server, so the bytes cross real HTTP and are split at
awkward places.
"""

from __future__ import annotations

import json
from typing import Any

from tests.support.model_server import ModelServer
from vendor_helpers import FIXTURES, MakeModel, collect, done_message, joined, simple_request

from crank.agent.messages import Message, assistant_message, tool_result, user_message
from crank.agent.model import ModelRequest
from crank.vendors.openai import render_messages

LLAMA = FIXTURES / "llama_cpp"
SERVERS = FIXTURES / "servers"
TOOLS = [
    {"name": "read", "description": "Read a file", "parameters": {"type": "object"}},
    {"name": "ls", "description": "List a folder", "parameters": {"type": "object"}},
]


def calls(message: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (block["id"], block["name"], block["arguments"])
        for block in message["content"]
        if block["type"] == "toolCall"
    ]


def recorded_id(name: str) -> str:
    """The call id as the recording has it (it is a random uuid per recording)."""
    for line in (LLAMA / name).read_text("utf-8").splitlines():
        if '"tool_calls": [' in line:
            chunk = json.loads(line.removeprefix("data: "))
            found: str = chunk["choices"][0]["delta"]["tool_calls"][0]["id"]
            return found
    raise AssertionError(f"no call in {name}")


async def test_recorded_llama_cpp_forced_call(server: ModelServer, make_model: MakeModel) -> None:
    """The name is repeated on every chunk and function_call is sent beside tool_calls:
    the call comes out once, named ``read`` (it read ``readread...`` before)."""
    server.add({"rawFile": str(LLAMA / "forced_read.sse")})
    events = await collect(make_model("openai", model="smollm2", api_key=None))
    message = done_message(events)
    assert calls(message) == [(recorded_id("forced_read.sse"), "read", {"path": "README.md"})]
    assert message["stopReason"] == "toolUse"
    starts = [e for e in events if e["type"] == "toolcall_start"]
    assert len(starts) == 1 and starts[0]["name"] == "read"
    assert json.loads(joined(events, "toolcall_delta", 0)) == {"path": "README.md"}
    assert message["usage"]["output"] > 0, "no usage sent: estimated"


async def test_recorded_llama_cpp_call_after_a_call(
    server: ModelServer, make_model: MakeModel
) -> None:
    server.add({"rawFile": str(LLAMA / "forced_ls_after_read.sse")})
    message = done_message(await collect(make_model("openai", model="smollm2", api_key=None)))
    ((call_id, name, arguments),) = calls(message)
    assert (call_id, name) == (recorded_id("forced_ls_after_read.sse"), "ls")
    assert set(arguments) == {"path"} and isinstance(arguments["path"], str)


async def test_recorded_llama_cpp_text_has_no_usage(
    server: ModelServer, make_model: MakeModel
) -> None:
    server.add({"rawFile": str(LLAMA / "text.sse")})
    message = done_message(await collect(make_model("openai", model="smollm2", api_key=None)))
    expected = "".join(
        json.loads(line.removeprefix("data: "))["choices"][0]["delta"].get("content") or ""
        for line in (LLAMA / "text.sse").read_text("utf-8").splitlines()
        if line.startswith("data: {")
    )
    assert message["content"] == [{"type": "text", "text": expected}] and expected
    assert message["usage"]["input"] > 0 and message["usage"]["output"] > 0


async def test_empty_stream_asks_again_unstreamed_and_learns_the_window(
    server: ModelServer, make_model: MakeModel
) -> None:
    """llama-cpp-python closes a 200 stream with nothing for a prompt past n_ctx; the
    same request unstreamed says why. The reply is an overflow (so the loop compacts)
    and the model now knows the server's window."""
    server.add(
        {"rawFile": str(LLAMA / "overflow_stream.sse")},
        {"bodyFile": str(LLAMA / "overflow_unstreamed.json"), "status": 400},
    )
    model = make_model("openai", model="smollm2", api_key=None)
    assert model.context_window == 8192, "an unknown local model starts at the default"
    message = done_message(await collect(model))
    assert message["stopReason"] == "error" and message["errorKind"] == "overflow"
    assert "maximum context length is 2048" in message["errorMessage"]
    assert model.context_window == 2048
    first, second = (r["body"] for r in server.requests)
    assert first["stream"] is True and second["stream"] is False
    assert "stream_options" not in second


async def test_empty_stream_answered_unstreamed(server: ModelServer, make_model: MakeModel) -> None:
    """``tool_choice: auto`` streamed fails the same way; unstreamed it answers, and
    the garbage ``function_call`` name beside ``tool_calls`` is ignored."""
    server.add(
        {"rawFile": str(LLAMA / "auto_stream.sse")},
        {"bodyFile": str(LLAMA / "auto_unstreamed.json")},
    )
    message = done_message(await collect(make_model("openai", model="smollm2", api_key=None)))
    recorded = json.loads((LLAMA / "auto_unstreamed.json").read_text("utf-8"))
    call = recorded["choices"][0]["message"]["tool_calls"][0]
    assert calls(message) == [(call["id"], "read", {"path": "a.py"})]
    assert message["stopReason"] == "toolUse"
    assert (message["usage"]["input"], message["usage"]["output"]) == (238, 9)


async def test_empty_stream_and_unstreamed_failure_is_an_error(
    server: ModelServer, make_model: MakeModel
) -> None:
    server.add({"raw": ""}, {"bodyFile": str(SERVERS / "bare_string_500.txt"), "status": 500})
    message = done_message(
        await collect(make_model("openai", model="m", api_key=None, max_retries=0))
    )
    assert message["stopReason"] == "error" and "Internal Server Error" in message["errorMessage"]


async def test_ollama_calls_all_at_index_zero(server: ModelServer, make_model: MakeModel) -> None:
    server.add({"rawFile": str(SERVERS / "ollama_tool_call.sse")})
    message = done_message(await collect(make_model("openai", model="qwen", api_key=None)))
    assert calls(message) == [
        ("call_k3x9w2aa", "read", {"path": "a.py"}),
        ("call_p0q7m1bb", "read", {"path": "b.py"}),
    ]
    assert message["stopReason"] == "toolUse", "finish_reason stop beside calls"


async def test_vllm_reasoning_two_calls_and_usage_chunk(
    server: ModelServer, make_model: MakeModel
) -> None:
    server.add({"rawFile": str(SERVERS / "vllm_reasoning_two_calls.sse")})
    message = done_message(await collect(make_model("openai", model="q", api_key=None)))
    assert message["content"][0] == {"type": "thinking", "thinking": "Two files to read."}
    assert calls(message) == [
        ("chatcmpl-tool-c9ZCzB9b9N", "read", {"path": "a.py"}),
        ("chatcmpl-tool-HfzZPEVfQg", "read", {"path": "b.py"}),
    ]
    assert (message["usage"]["input"], message["usage"]["output"]) == (312, 49)


async def test_lmstudio_text_then_call(server: ModelServer, make_model: MakeModel) -> None:
    server.add({"rawFile": str(SERVERS / "lmstudio_tool_call.sse")})
    message = done_message(await collect(make_model("openai", model="q", api_key=None)))
    assert message["content"][0] == {"type": "text", "text": "I'll look."}
    assert calls(message) == [("365174485", "ls", {"path": "src"})]


async def test_openrouter_comments_reasoning_and_usage(
    server: ModelServer, make_model: MakeModel
) -> None:
    server.add({"rawFile": str(SERVERS / "openrouter_reasoning_usage.sse")})
    message = done_message(await collect(make_model("openai", model="deepseek/r1")))
    assert message["content"] == [
        {"type": "thinking", "thinking": "Count: two plus two."},
        {"type": "text", "text": "4"},
    ]
    assert (message["usage"]["input"], message["usage"]["output"]) == (12, 9)


async def test_interleaved_object_arguments_and_calls_without_index(
    server: ModelServer, make_model: MakeModel
) -> None:
    server.add({"rawFile": str(SERVERS / "deltas_odd.sse")})
    message = done_message(await collect(make_model("openai", model="m", api_key=None)))
    found = calls(message)
    assert [(i, n, a) for i, n, a in found[:2]] == [
        ("call_a", "read", {"path": "a.py"}),
        ("call_b", "ls", {"path": "src"}),
    ]
    assert [(n, a) for _, n, a in found[2:]] == [
        ("bash", {"command": "ls -la"}),
        ("grep", {"pattern": "x"}),
    ]
    assert found[2][0].startswith("call_") and found[2][0] != found[3][0], "ids made up"
    assert message["stopReason"] == "toolUse"


async def test_legacy_function_call(server: ModelServer, make_model: MakeModel) -> None:
    server.add({"rawFile": str(SERVERS / "legacy_function_call.sse")})
    message = done_message(await collect(make_model("openai", model="m", api_key=None)))
    ((call_id, name, arguments),) = calls(message)
    assert (name, arguments) == ("read", {"path": "a.py"}) and call_id.startswith("call_")
    assert message["stopReason"] == "toolUse"


async def test_finish_reason_follows_the_content(
    server: ModelServer, make_model: MakeModel
) -> None:
    server.add({"rawFile": str(SERVERS / "finish_disagrees.sse")})
    message = done_message(await collect(make_model("openai", model="m", api_key=None)))
    assert message["stopReason"] == "stop" and calls(message) == []


async def test_bare_string_errors(server: ModelServer, make_model: MakeModel) -> None:
    server.add(
        {"rawFile": str(SERVERS / "bare_string_error.sse")},
        {"bodyFile": str(SERVERS / "bare_string_500.txt"), "status": 500},
    )
    midstream = done_message(await collect(make_model("openai", model="m", api_key=None)))
    assert "the backend ran out of memory" in midstream["errorMessage"]
    assert midstream["content"] == [{"type": "text", "text": "Par"}]
    failed = done_message(
        await collect(make_model("openai", model="m", api_key=None, max_retries=0))
    )
    assert failed["errorKind"] == "server" and "Internal Server Error" in failed["errorMessage"]


async def test_stream_options_refused_is_sent_again_without(
    server: ModelServer, make_model: MakeModel
) -> None:
    server.add(
        {"status": 400, "errorMessage": "Unrecognized request argument supplied: stream_options"},
        {"text": "fine", "noUsage": True},
        {"text": "again", "noUsage": True},
    )
    model = make_model("openai", model="m", api_key=None)
    message = done_message(await collect(model))
    assert message["content"] == [{"type": "text", "text": "fine"}]
    first, second = (r["body"] for r in server.requests)
    assert "stream_options" in first and "stream_options" not in second
    await collect(model)
    assert "stream_options" not in server.requests[2]["body"], "remembered for the server"


async def test_output_limit_field_follows_the_server(
    server: ModelServer, make_model: MakeModel
) -> None:
    server.add(
        {
            "status": 400,
            "errorMessage": "Unsupported parameter: 'max_tokens' is not supported with this "
            "model. Use 'max_completion_tokens' instead.",
        },
        {"text": "ok"},
    )
    model = make_model("openai", model="m", api_key=None, max_output_tokens=64)
    assert done_message(await collect(model))["content"] == [{"type": "text", "text": "ok"}]
    first, second = (r["body"] for r in server.requests)
    assert first["max_tokens"] == 64 and "max_completion_tokens" not in first
    assert second["max_completion_tokens"] == 64 and "max_tokens" not in second
    hosted = make_model("openai", base_url="https://api.openai.com/v1", max_output_tokens=5)
    assert "max_completion_tokens" in hosted.body(simple_request())  # type: ignore[attr-defined]


def test_alternating_roles_after_a_compaction_summary() -> None:
    """A compaction summary is a user message; the prompt after it is another: sent as
    one user turn, for templates that insist on alternation (llama.cpp, Mistral)."""
    summary: Message = user_message("<summary>Earlier: fixed a.py</summary>", 1)
    history: list[Message] = [
        summary,
        user_message("now the docs", 2),
        assistant_message(
            [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a"}}],
            stop_reason="toolUse",
            timestamp=3,
        ),
        tool_result("c1", "read", "text"),
    ]
    sent = render_messages("S", history)
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool"]
    assert sent[1]["content"] == "<summary>Earlier: fixed a.py</summary>\n\nnow the docs"
    assert sent[2]["content"] == "", "not null: llama-cpp-python refuses null"


async def test_wrong_model_name_lists_what_is_served(make_model: MakeModel) -> None:
    """Ollama answers a wrong model name with a 404; the error lists the models."""
    async with ModelServer([]) as running:
        running.add(
            {
                "status": 404,
                "errorType": "api_error",
                "errorMessage": 'model "qwen9" not found, try pulling it first',
            }
        )
        running.routes["/v1/models"] = {"data": [{"id": "qwen2.5-coder:7b"}, {"id": "llama3.2:3b"}]}
        model = make_model("openai", model="qwen9", api_key=None, base_url=running.url + "/v1")
        message = done_message(await collect(model, ModelRequest(system="", messages=[])))
    assert "not found" in message["errorMessage"]
    assert "offers: qwen2.5-coder:7b, llama3.2:3b" in message["errorMessage"]
