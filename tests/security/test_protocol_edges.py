"""The protocol parts of issue 26 item 7: a malformed error answer from an ACP client
fails that question as a rejection; a second LSP ``shutdown`` is -32600 in plain words
and ``exit`` still exits 0; an ACP line past the 64 MiB bound is refused as it passes
the bound, without being held (peak RSS measured in the agent's own fresh process)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.lsp.wire import notification, request, started
from tests.support.model_server import ModelServer

from .frontends import acp_agent, acp_session, prompt_params

LINE_MB = 400


@pytest.mark.parametrize(
    "error",
    [{"code": "nope", "message": "x"}, {"code": 1.5}, {"message": None}, "broken", [1]],
)
async def test_a_malformed_permission_error_answer_is_a_rejection(
    tmp_path: Path, error: Any
) -> None:
    script = {
        "replies": [
            {"toolCalls": [{"name": "write", "arguments": {"path": "a.txt", "content": "A"}}]},
            {"text": "gave up"},
        ]
    }
    with ModelServer(script) as model:
        async with acp_agent(tmp_path, model) as agent:
            agent.answer_permission = lambda msg_id, params: {
                "jsonrpc": "2.0",
                "id": msg_id,
                "error": error,
            }
            session_id = await acp_session(agent, tmp_path)
            answer = await agent.call(1, "session/prompt", prompt_params(session_id, "write"))
            assert answer.get("result", {}).get("stopReason") == "end_turn", answer
            assert any(m.get("method") == "session/request_permission" for m in agent.messages)
        assert not (tmp_path / "a.txt").exists()
        assert len(model.requests) == 2


async def test_a_second_shutdown_is_refused_plainly_and_exit_exits_0(tmp_path: Path) -> None:
    wire = await started(tmp_path)
    wire.send(request("s1", "shutdown") + request("s2", "shutdown"))
    assert (await wire.answer("s1"))["result"] is None
    error = await wire.error("s2")
    assert error["code"] == -32600, error
    assert "Traceback" not in error["message"] and "already" in error["message"], error
    wire.send(notification("exit"))
    assert await wire.wait_exit() == 0


def _peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
async def test_an_oversized_acp_line_is_refused_without_being_held(tmp_path: Path) -> None:
    with ModelServer({"replies": []}) as model:
        async with acp_agent(tmp_path, model) as agent:
            piece = b"x" * (1 << 20)
            agent.send(b'{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"p":"')
            for _ in range(LINE_MB):
                agent.send(piece)
                assert agent.process.stdin is not None
                await agent.process.stdin.drain()
            agent.send(b'"}}\n')
            answer = await agent.call("after", "initialize", {"protocolVersion": 1})
            assert "result" in answer, answer
            [refused] = agent.answers[None]
            assert refused["error"]["code"] == -32600
            assert 7 not in agent.answers
            peak_mb = _peak_rss_kb(agent.process.pid) / 1024
        print(f"crank acp peak RSS after a {LINE_MB} MB line: {peak_mb:.0f} MB")
        assert peak_mb < LINE_MB / 2, f"peak RSS {peak_mb:.0f} MB: the line was held"
