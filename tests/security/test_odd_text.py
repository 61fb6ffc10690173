"""Text that cannot be encoded never wedges or poisons anything (issue 26, item 1).

A workspace with a file whose name is not UTF-8 (``bad\\xffname.txt``), a loopback model
that calls ls, find, grep and bash over it: on each frontend the run settles, every
byte written is UTF-8, the session is saved and a later prompt (and a fresh process)
continues it. How the tools themselves show the name is the tools' business; these
tests hold the boundaries: events, ACP lines, session lines, provider bodies and
``crank run`` output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crank.agent import wiretext
from crank.session import jsonio
from tests.support.model_server import ModelServer

from .frontends import (
    acp_agent,
    acp_session,
    bad_workspace,
    crank_run,
    file_tool_calls,
    json_lines,
    lsp_call,
    lsp_run,
    lsp_server,
    prompt_params,
)


def _script() -> dict[str, object]:
    return {
        "rules": [{"lastUserContains": "again", "reply": {"text": "still here"}}],
        "replies": [{"toolCalls": file_tool_calls()}, {"text": "listed"}],
    }


def _bodies_are_utf8(model: ModelServer) -> None:
    """Every request the model received was sent: none was lost to an encoder."""
    for body in model.requests:
        json.dumps(body, ensure_ascii=False).encode("utf-8")


def _sessions_read_strictly(folder: Path) -> int:
    """Every session line is UTF-8 JSON without a lone surrogate (the fast reader
    takes every line, so none needed the lenient path)."""
    import msgspec

    files = list(folder.rglob("*.jsonl"))
    for path in files:
        for line in path.read_bytes().splitlines():
            msgspec.json.decode(line)
    return len(files)


async def test_serve_settles_and_continues_over_a_name_that_is_not_utf8(tmp_path: Path) -> None:
    bad_workspace(tmp_path / "p")
    with ModelServer(_script()) as model:
        async with lsp_server(tmp_path, model) as wire:
            events = await lsp_run(wire, "p1", "list everything")
            ends = [e for e in events if e["type"] == "tool_execution_end"]
            assert len(ends) == 4, [e["type"] for e in events]
            assert next(e for e in events if e["type"] == "agent_end")["stopReason"] != "error"
            shown = await lsp_call(wire, "m1", "crank/messages", {})
            assert "result" in shown and wiretext.lone_surrogate_at(shown) is None, shown
            again = await lsp_run(wire, "p2", "again")
            assert any(
                e["type"] == "message_end" and "still here" in json.dumps(e) for e in again
            ), again
        async with lsp_server(tmp_path, model) as wire:
            events = await lsp_run(wire, "p3", "again")
            assert any(e["type"] == "agent_settled" for e in events)
        _bodies_are_utf8(model)
        assert len(model.requests) >= 3
    assert _sessions_read_strictly(tmp_path / "sessions") >= 1


async def test_acp_answers_and_continues_over_a_name_that_is_not_utf8(tmp_path: Path) -> None:
    work = bad_workspace(tmp_path / "w")
    with ModelServer(_script()) as model:
        async with acp_agent(tmp_path, model) as agent:
            session_id = await acp_session(agent, work)
            answer = await agent.call(1, "session/prompt", prompt_params(session_id, "list"))
            assert answer.get("result", {}).get("stopReason") == "end_turn", answer
            answer = await agent.call(2, "session/prompt", prompt_params(session_id, "again"))
            assert answer.get("result", {}).get("stopReason") == "end_turn", answer
            assert "result" in await agent.call(
                3, "session/new", {"cwd": str(work), "mcpServers": []}
            )
        async with acp_agent(tmp_path, model) as agent:
            loaded = await agent.call(
                "load",
                "session/load",
                {"sessionId": session_id, "cwd": str(work), "mcpServers": []},
            )
            assert "result" in loaded, loaded
            answer = await agent.call(4, "session/prompt", prompt_params(session_id, "again"))
            assert answer.get("result", {}).get("stopReason") == "end_turn", answer
        _bodies_are_utf8(model)
    assert _sessions_read_strictly(tmp_path / "acp-sessions") >= 1


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_run_json_is_utf8_and_continue_works(tmp_path: Path, api: str) -> None:
    work = bad_workspace(tmp_path / "w")
    sessions = str(tmp_path / "sessions")
    with ModelServer(_script()) as model:
        done = crank_run(work, model, "--json", "--session-dir", sessions, "list", api=api)
        assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
        lines = json_lines(done.stdout)
        assert lines[-1]["event"]["type"] == "agent_settled"
        assert sum(1 for line in lines if line["event"]["type"] == "tool_execution_end") == 4
        again = crank_run(work, model, "--continue", "--session-dir", sessions, "again", api=api)
        assert again.returncode == 0, again.stderr.decode("utf-8", "replace")
        assert again.stdout.decode("utf-8") == "still here\n"
        _bodies_are_utf8(model)
    assert _sessions_read_strictly(Path(sessions)) == 1


def test_a_session_poisoned_by_an_earlier_version_opens_and_continues(tmp_path: Path) -> None:
    """Lines the old writer produced: a lone surrogate escape (``\\udcff``) and raw bytes
    that are not UTF-8. The session opens, the model is sent the text escaped, and the
    new lines are clean."""
    work = tmp_path / "w"
    work.mkdir()
    sessions = tmp_path / "sessions"
    with ModelServer({"replies": [{"text": "first"}, {"text": "fine"}]}) as model:
        done = crank_run(work, model, "--session-dir", str(sessions), "start")
        assert done.returncode == 0, done.stderr
        [path] = list(sessions.rglob("*.jsonl"))
        lines = path.read_bytes().splitlines()
        last = json.loads(lines[-1])
        poisoned = []
        for number, text in enumerate((b"bad\\udcffname", b"raw \xff byte", b"lone \\ud800")):
            entry = {
                "type": "message",
                "id": f"old{number}",
                "parentId": last["id"],
                "timestamp": last["timestamp"] + 1 + number,
                "message": {"role": "user", "content": "@@", "timestamp": 1},
            }
            poisoned.append(json.dumps(entry, separators=(",", ":")).encode().replace(b"@@", text))
            last = entry
        path.write_bytes(b"\n".join([*lines, *poisoned]) + b"\n")
        again = crank_run(work, model, "--continue", "--session-dir", str(sessions), "on")
        assert again.returncode == 0, again.stderr.decode("utf-8", "replace")
        assert again.stdout == b"fine\n"
        sent = json.dumps(model.requests[-1]["body"], ensure_ascii=False)
        for shown in ("bad\\\\xffname", "raw \\\\xff byte", "lone \\\\ud800"):
            assert shown in sent, sent
    for line in path.read_bytes().splitlines()[len(lines) + len(poisoned) :]:
        jsonio.loads(line)
        assert b"\\udcff" not in line and b"\\ud800" not in line
