"""The reusable loopback server itself: script mode, thread mode, rules."""

import asyncio
import json
import sys
from pathlib import Path

import httpx
from tests.support.model_server import ModelServer
from vendor_helpers import ROOT, MakeModel, collect, done_message, simple_request

from crank.vendors import OpenAIModel, ProviderConfig


async def test_script_mode_prints_port_and_serves(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": [{"text": "from a subprocess"}]}))
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(ROOT / "tests/support/model_server.py"),
        "--script",
        str(script),
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        line = (await process.stdout.readline()).decode()
        assert line.startswith("PORT ")
        url = f"http://127.0.0.1:{int(line.split()[1])}"
        model = OpenAIModel(ProviderConfig(api="openai", model="m", base_url=url + "/v1"))
        message = done_message(await collect(model, simple_request("hello there")))
        assert message["content"] == [{"type": "text", "text": "from a subprocess"}]
        async with httpx.AsyncClient() as client:
            recorded = (await client.get(url + "/_requests")).json()
        assert recorded[0]["body"]["messages"][-1] == {"role": "user", "content": "hello there"}
    finally:
        process.kill()
        await process.wait()


def test_thread_mode_and_rules() -> None:
    script = {
        "replies": [{"text": "in order", "chunks": 1}],
        "rules": [{"lastUserContains": "weather", "reply": {"text": "sunny", "chunks": 1}}],
    }
    with ModelServer(script) as server:
        with httpx.Client() as client:
            body = {"model": "m", "messages": [{"role": "user", "content": "the weather?"}]}
            answer = client.post(server.url + "/v1/chat/completions", json=body).text
            assert '"content": "sunny"' in answer
            body["messages"][0]["content"] = "anything"
            assert "in order" in client.post(server.url + "/v1/chat/completions", json=body).text
            exhausted = client.post(server.url + "/v1/chat/completions", json=body)
            assert exhausted.status_code == 500 and "exhausted" in exhausted.text
        assert len(server.requests) == 3


def test_rule_on_the_last_message_answers_the_turn_after_a_tool() -> None:
    script = {
        "rules": [
            {
                "lastMessageContains": "TOOL-SAID-42",
                "reply": {"text": "after the tool", "chunks": 1},
            },
            {"lastUserContains": "run it", "reply": {"text": "calling", "chunks": 1}},
        ]
    }
    with ModelServer(script) as server, httpx.Client() as client:
        url = server.url + "/v1/chat/completions"
        first = [{"role": "user", "content": "run it"}]
        assert '"content": "calling"' in client.post(url, json={"messages": first}).text
        tool = {"role": "tool", "tool_call_id": "c1", "content": "out: TOOL-SAID-42"}
        after = {"messages": [*first, {"role": "assistant", "content": None}, tool]}
        assert '"content": "after the tool"' in client.post(url, json=after).text
        block = {"type": "tool_result", "tool_use_id": "c1", "content": "TOOL-SAID-42"}
        anthropic = {"messages": [*first, {"role": "user", "content": [block]}]}
        assert "after the tool" in client.post(server.url + "/v1/messages", json=anthropic).text


async def test_events_are_split_across_writes(server: ModelServer, make_model: MakeModel) -> None:
    server.add({"text": "x" * 50, "chunks": 25})
    writes: list[bytes] = []
    async with httpx.AsyncClient() as client:
        body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
        async with client.stream("POST", server.url + "/v1/messages", json=body) as response:
            async for piece in response.aiter_raw():
                writes.append(piece)
    text = b"".join(writes).decode()
    assert text.count("content_block_delta") >= 50
    assert any(not piece.endswith(b"\n\n") for piece in writes), "some reads end mid-event"
