"""``crank acp`` driven by the official ACP Python SDK over stdio, against the loopback
model server: prompts, tool calls and their diffs, permissions each way, cancel at
every stage, loading a session ``crank serve`` wrote, modes and the model option."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, get_args

import acp
import pytest
from acp import schema

from crank.acp.translate import NOTICE_TITLES
from crank.agent.model import NoticeKind
from tests.lsp.helpers import model_received, running_server
from tests.support.model_server import ModelServer

from .helpers import RecordingClient, agent_env, crank_acp
from .judge import Judge
from .test_acp_wire import Lines, request


def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    return folder


async def test_a_prompt_streams_chunks_and_ends_the_turn(tmp_path: Path) -> None:
    folder = project(tmp_path)
    client = RecordingClient()
    async with (
        ModelServer(
            {"replies": [{"text": "Hello from the model.", "chunks": 4, "delayMs": 40}]}
        ) as model,
        crank_acp(model, tmp_path, client) as conn,
    ):
        session = await conn.new_session(cwd=str(folder))
        assert session.modes is not None and session.modes.current_mode_id == "ask"
        answer = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("hi")])
        assert answer.stop_reason == "end_turn"
        assert client.text() == "Hello from the model."
        assert len(client.of("agent_message_chunk")) >= 2, "streamed, not one block"
        usage = client.of("usage_update")
        assert usage and usage[-1].size > 0
        sent = model.requests[0]["body"]["messages"][-1]["content"]
        assert "hi" in json.dumps(sent)


async def test_a_tool_call_with_its_diff_and_both_permission_answers(tmp_path: Path) -> None:
    folder = project(tmp_path)
    fix = {"path": "calc.py", "oldText": "return a - b", "newText": "return a + b"}
    again = {"path": "calc.py", "oldText": "a + b", "newText": "b + a"}
    script = {
        "replies": [
            {"toolCalls": [{"id": "c1", "name": "edit", "arguments": fix}]},
            {"toolCalls": [{"id": "c2", "name": "edit", "arguments": again}]},
            {"text": "Fixed it."},
        ]
    }
    client = RecordingClient(answers=["allow", "reject"])
    async with ModelServer(script) as model, crank_acp(model, tmp_path, client) as conn:
        session = await conn.new_session(cwd=str(folder))
        answer = await conn.prompt(
            session_id=session.session_id, prompt=[acp.text_block("fix calc.py")]
        )
        assert answer.stop_reason == "end_turn"
    assert (folder / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert [q.options[0].kind for q in client.questions] == ["allow_once", "allow_once"]
    kinds = [option.kind for option in client.questions[0].options]
    assert len(set(kinds)) == len(kinds), "each option has a kind of its own"
    asked = client.questions[0].tool_call
    assert asked.kind == "edit" and asked.content and asked.content[0].type == "diff"
    starts = client.of("tool_call")
    assert [s.tool_call_id for s in starts] == ["c1", "c2"]
    assert starts[0].kind == "edit" and starts[0].locations[0].path == str(folder / "calc.py")
    assert starts[0].status == "pending" and not starts[0].content, "no fragments: asked first"
    diff = asked.content[0]
    assert (diff.old_text, diff.new_text) == (
        "def add(a, b):\n    return a - b\n",
        "def add(a, b):\n    return a + b\n",
    )
    ends = [u for u in client.of("tool_call_update") if u.status in ("completed", "failed")]
    assert [(u.tool_call_id, u.status) for u in ends] == [("c1", "completed"), ("c2", "failed")]


async def test_allow_always_is_remembered_and_a_dismissed_question_rejects(
    tmp_path: Path,
) -> None:
    folder = project(tmp_path)
    calls = [{"id": f"c{n}", "name": "bash", "arguments": {"command": "echo hi"}} for n in range(3)]
    script = {"replies": [{"toolCalls": [call]} for call in calls] + [{"text": "done"}]}
    client = RecordingClient(answers=["allowSession"])
    async with ModelServer(script) as model, crank_acp(model, tmp_path, client) as conn:
        session = await conn.new_session(cwd=str(folder))
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("run it")])
    assert len(client.questions) == 1, "allowed for the session: asked once"
    outputs = [u for u in client.of("tool_call_update") if u.status == "completed"]
    assert len(outputs) == 3 and "hi" in outputs[0].raw_output["content"]

    client = RecordingClient(answers=[None])
    script = {"replies": [{"toolCalls": [calls[0]]}, {"text": "ok"}]}
    async with ModelServer(script) as model, crank_acp(model, tmp_path, client) as conn:
        session = await conn.new_session(cwd=str(folder))
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("run it")])
        result = model.requests[1]["body"]["messages"]
    assert any("cancelled" in json.dumps(m) for m in result), "the refusal reached the model"


@pytest.mark.parametrize("stage", ["silent stream", "permission", "long command", "retry"])
async def test_cancel_ends_the_turn_with_cancelled(tmp_path: Path, stage: str) -> None:
    folder = project(tmp_path)
    first = {
        "silent stream": {"text": "never", "hangAfter": 0},
        "permission": {"toolCalls": [{"id": "c1", "name": "bash", "arguments": {"command": "ls"}}]},
        "long command": {
            "toolCalls": [{"id": "c1", "name": "bash", "arguments": {"command": "sleep 30"}}]
        },
        "retry": {"status": 529, "retryAfter": 30},  # Crank waits 30 s before trying again
    }[stage]
    script = {"replies": [first, {"text": "after the cancel"}]}
    args = ("--permission-mode", "auto") if stage == "long command" else ()
    client = RecordingClient(answers=["wait"])
    async with ModelServer(script) as model, crank_acp(model, tmp_path, client, *args) as conn:
        session = await conn.new_session(cwd=str(folder))
        turn = asyncio.ensure_future(
            conn.prompt(session_id=session.session_id, prompt=[acp.text_block("go")])
        )
        if stage in ("silent stream", "retry"):
            await model_received(model, 1)
        elif stage == "permission":
            await asyncio.wait_for(client.asked.wait(), 120)
        else:
            await client.wait_for(lambda: client.of("tool_call"), "the command to start")
        await conn.cancel(session_id=session.session_id)
        answer = await asyncio.wait_for(turn, 120)
        assert answer.stop_reason == "cancelled"
        again = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("more")])
        assert again.stop_reason == "end_turn"
        assert client.text().endswith("after the cancel")


async def test_load_replays_a_session_written_by_crank_serve(tmp_path: Path) -> None:
    """A session started in an LSP editor continues in an ACP one: the transcript comes
    back as updates, and the next prompt carries the old conversation."""
    folder = project(tmp_path)
    read = {"path": "calc.py"}
    script = {
        "replies": [
            {"toolCalls": [{"id": "r1", "name": "read", "arguments": read}]},
            {"text": "It subtracts."},
            {"text": "Still subtracts."},
        ]
    }
    async with ModelServer(script) as model:
        options = {
            "provider": {"api": "openai", "baseUrl": model.url + "/v1", "model": "m"},
            "sessionDir": str(tmp_path / "sessions"),
        }
        async with running_server(tmp_path, [folder], options) as lsp:
            started = await lsp.request("crank/prompt", {"text": "what does add do?"})
            await lsp.settled(started["runId"])
            session_id = started["sessionId"]
        client = RecordingClient()
        async with crank_acp(model, tmp_path, client) as conn:
            await conn.load_session(cwd=str(folder), session_id=session_id)
            assert client.kinds()[:2] == ["user_message_chunk", "tool_call"]
            assert client.text("user_message_chunk") == "what does add do?"
            assert client.text() == "It subtracts."
            done = [u for u in client.of("tool_call_update") if u.status == "completed"]
            assert "return a - b" in done[0].raw_output["content"]
            answer = await conn.prompt(session_id=session_id, prompt=[acp.text_block("sure?")])
            assert answer.stop_reason == "end_turn"
            history = json.dumps(model.requests[-1]["body"]["messages"])
            assert "what does add do?" in history and "It subtracts." in history


async def test_modes_and_the_model_option(tmp_path: Path) -> None:
    folder = project(tmp_path)
    client = RecordingClient()
    script = {"replies": [{"toolCalls": [{"name": "bash", "arguments": {"command": "ls"}}]}, {}]}
    async with ModelServer(script) as model, crank_acp(model, tmp_path, client) as conn:
        session = await conn.new_session(cwd=str(folder))
        modes = [mode.id for mode in session.modes.available_modes]
        assert modes == ["ask", "autoEdit", "auto", "readOnly"]
        await conn.set_session_mode(session_id=session.session_id, mode_id="auto")
        assert client.of("current_mode_update")[-1].current_mode_id == "auto"
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("ls")])
        assert client.questions == [], "auto mode asks nothing"
        model_option = session.config_options[0]
        assert model_option.id == "model" and model_option.current_value == "openai/test-model"
        changed = await conn.set_config_option(
            config_id="model", session_id=session.session_id, value="openai/other-model"
        )
        assert changed.config_options[0].current_value == "openai/other-model"
        with pytest.raises(acp.RequestError) as caught:
            await conn.set_session_mode(session_id=session.session_id, mode_id="yolo")
        assert "modeId" in str(caught.value)


async def test_a_bad_request_is_answered_and_the_agent_goes_on(tmp_path: Path) -> None:
    folder = project(tmp_path)
    client = RecordingClient()
    async with (
        ModelServer({"replies": [{"text": "fine"}]}) as model,
        crank_acp(model, tmp_path, client) as conn,
    ):
        with pytest.raises(acp.RequestError) as caught:
            await conn.new_session(cwd="relative/path")
        assert caught.value.code == -32602 and "cwd" in str(caught.value)
        with pytest.raises(acp.RequestError):
            await conn.prompt(session_id="nope", prompt=[acp.text_block("x")])
        session = await conn.new_session(cwd=str(folder))
        answer = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("x")])
        assert answer.stop_reason == "end_turn"


async def test_a_prompt_during_a_turn_is_queued_as_a_follow_up(tmp_path: Path) -> None:
    folder = project(tmp_path)
    script = {
        "replies": [
            {"toolCalls": [{"id": "s", "name": "bash", "arguments": {"command": "sleep 1"}}]},
            {"text": "first done"},
            {"text": "second done"},
        ]
    }
    client = RecordingClient()
    args = ("--permission-mode", "auto")
    async with ModelServer(script) as model, crank_acp(model, tmp_path, client, *args) as conn:
        session = await conn.new_session(cwd=str(folder))
        first = asyncio.ensure_future(
            conn.prompt(session_id=session.session_id, prompt=[acp.text_block("one")])
        )
        await client.wait_for(lambda: client.of("tool_call"), "the first turn's command")
        second = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("two")])
        assert second.stop_reason == "end_turn"
        assert (await first).stop_reason == "end_turn"
        assert "second done" in client.text()
        last = json.dumps(model.requests[-1]["body"]["messages"])
        assert "two" in last


def test_every_message_kind_used_is_in_the_sdk_schema() -> None:
    """The update kinds Crank emits exist in the schema version the SDK carries."""
    kinds = {
        cls.model_fields["session_update"].annotation.__args__[0]
        for cls in (
            schema.AgentMessageChunk,
            schema.AgentThoughtChunk,
            schema.ToolCallStart,
            schema.ToolCallProgress,
            schema.UsageUpdate,
            schema.UserMessageChunk,
            schema.CurrentModeUpdate,
        )
    }
    assert kinds >= {"agent_message_chunk", "tool_call", "tool_call_update", "usage_update"}


async def test_a_notice_reaches_the_client_as_a_message_of_its_own(tmp_path: Path) -> None:
    """The local server says its template cannot call tools (llama-server's ``/props``
    shape, as in tests/lsp/test_local_server.py): the ACP client is told, in a message
    whose id is not the reply's."""
    folder = project(tmp_path)
    client = RecordingClient()
    async with ModelServer({"replies": [{"text": "I would change the minus."}]}) as model:
        model.routes["/props"] = {
            "default_generation_settings": {"n_ctx": 4096},
            "chat_template_caps": {"supports_tools": False, "supports_tool_calls": False},
        }
        async with crank_acp(model, tmp_path, client) as conn:
            session = await conn.new_session(cwd=str(folder))
            answer = await conn.prompt(
                session_id=session.session_id, prompt=[acp.text_block("fix calc.py")]
            )
            assert answer.stop_reason == "end_turn"
    chunks = client.of("agent_message_chunk")
    told = [c for c in chunks if "cannot call tools" in c.content.text]
    assert len(told) == 1, "\n---\n".join(c.content.text for c in chunks)
    assert told[0].content.text.startswith("Crank: this server cannot call tools")
    replies = {c.message_id for c in chunks if "minus" in c.content.text}
    assert told[0].message_id and told[0].message_id not in replies


def test_a_client_that_offers_session_notices_gets_acp_notice_updates(tmp_path: Path) -> None:
    """With ``session.notices`` advertised, the same notice is ACP's ``notice`` update
    (severity, a title that stands alone, the sentence as description), checked against
    ACP's published schema, and no message carries it. Raw lines: the Python SDK
    (0.12) has no ``session.notices`` yet and drops it from the capabilities."""
    folder = project(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    capabilities = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
    capabilities["session"] = {"notices": {}}
    judge = Judge()
    with ModelServer({"replies": [{"text": "I would change the minus."}]}) as model:
        model.routes["/props"] = {
            "default_generation_settings": {"n_ctx": 4096},
            "chat_template_caps": {"supports_tools": False, "supports_tool_calls": False},
        }
        agent = subprocess.Popen(
            [sys.executable, "-m", "crank.acp", "--session-dir", str(tmp_path / "s")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=agent_env(model, home),
            cwd=tmp_path,
        )
        assert agent.stdin is not None and agent.stdout is not None
        lines = Lines(agent.stdout)
        seen: list[dict[str, Any]] = []

        def ask(request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
            line = request(request_id, method, params)
            judge.see("client", json.loads(line))
            agent.stdin.write(line + "\n")
            agent.stdin.flush()
            while True:
                message = json.loads(lines.next())
                judge.see("agent", message)
                seen.append(message)
                if message.get("id") == request_id:
                    return message

        try:
            ask(1, "initialize", {"protocolVersion": 1, "clientCapabilities": capabilities})
            created = ask(2, "session/new", {"cwd": str(folder), "mcpServers": []})
            session_id = created["result"]["sessionId"]
            text = [{"type": "text", "text": "fix it"}]
            ask(3, "session/prompt", {"sessionId": session_id, "prompt": text})
        finally:
            agent.stdin.close()
            agent.wait(timeout=60)
    judge.assert_valid()
    updates = [m["params"]["update"] for m in seen if m.get("method") == "session/update"]
    notices = [u for u in updates if u["sessionUpdate"] == "notice"]
    assert [(n["severity"], n["title"]) for n in notices] == [
        ("warning", "This model server cannot call tools")
    ]
    assert notices[0]["description"].startswith("this server cannot call tools")
    texts = [u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert texts and not any("cannot call tools" in t for t in texts)


def test_every_notice_kind_has_an_acp_title() -> None:
    assert set(NOTICE_TITLES) == set(get_args(NoticeKind))
