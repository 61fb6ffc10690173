"""ls, find and grep over a file name that is not UTF-8, tool by tool, over ``crank acp``
(the real ACP SDK client) and ``crank run --json`` (issue 26 item 1; ``crank serve``:
tests/lsp/test_hostile_tools.py). Before the one rule for text, ``crank acp`` never
answered that prompt nor any later request, and ``crank run --json`` printed lines
that were not UTF-8, exited 1, and every later ``--continue`` failed, even after the
file was gone. Here every run settles, the name reaches the model escaped
(``bad\\xffname.txt``, as ``tools/names.py`` shows it), and the session goes on.
test_odd_text.py holds the boundaries with all the tools in one reply; these hold
each tool alone, and what the model is sent."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import acp
import pytest

from tests.acp.client_side import RecordingClient
from tests.acp.helpers import crank_acp
from tests.support.model_server import ModelServer

from .frontends import BAD_NAME, bad_workspace, crank_run, json_lines

ESCAPED = r"bad\xffname.txt"
TOOLS = {
    "ls": {"path": "."},
    "find": {"pattern": "**/*"},
    "grep": {"pattern": "needle"},
}


def one_tool(tool: str) -> dict[str, Any]:
    """A model that calls ``tool`` once, says "listed", and "still here" to "again"."""
    call = {"id": "t1", "name": tool, "arguments": TOOLS[tool]}
    return {
        "rules": [{"lastUserContains": "again", "reply": {"text": "still here"}}],
        "replies": [{"toolCalls": [call]}, {"text": "listed"}],
    }


def sent_results(model: ModelServer) -> str:
    """The tool results the model was sent (the last request holds them all)."""
    for request in reversed(model.requests):
        body = request["body"]
        found = [str(m["content"]) for m in body.get("messages", []) if m.get("role") == "tool"]
        if found:
            return "\n".join(found)
    raise AssertionError("no request carried a tool result")


@pytest.mark.parametrize("tool", sorted(TOOLS))
async def test_acp_answers_and_the_model_sees_the_name_escaped(tmp_path: Path, tool: str) -> None:
    work = bad_workspace(tmp_path / "w")
    client = RecordingClient()
    with ModelServer(one_tool(tool)) as model:
        async with crank_acp(model, tmp_path, client) as conn:
            session = await conn.new_session(cwd=str(work))
            answer = await conn.prompt(
                session_id=session.session_id, prompt=[acp.text_block("list")]
            )
            assert answer.stop_reason == "end_turn"
            assert client.text().endswith("listed")
            [status] = {
                u.status
                for u in client.of("tool_call_update")
                if u.status in ("completed", "failed")
            }
            assert status == "completed"
            assert ESCAPED in sent_results(model)
            again = await conn.prompt(
                session_id=session.session_id, prompt=[acp.text_block("again")]
            )
            assert again.stop_reason == "end_turn"
            assert client.text().endswith("still here")


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_run_json_is_utf8_and_continues_after_the_file_is_gone(tmp_path: Path, tool: str) -> None:
    work = bad_workspace(tmp_path / "w")
    sessions = str(tmp_path / "sessions")
    with ModelServer(one_tool(tool)) as model:
        done = crank_run(work, model, "--json", "--session-dir", sessions, "list")
        assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
        lines = json_lines(done.stdout)  # strict UTF-8, every line
        events = [line["event"] for line in lines]
        [end] = [event for event in events if event["type"] == "tool_execution_end"]
        assert end["result"]["isError"] is False, end
        assert ESCAPED in str(end["result"]["content"])
        assert events[-1]["type"] == "agent_settled"
        assert ESCAPED in sent_results(model)
        os.remove(os.path.join(os.fsencode(work), BAD_NAME))
        again = crank_run(work, model, "--continue", "--session-dir", sessions, "again")
        assert again.returncode == 0, again.stderr.decode("utf-8", "replace")
        assert again.stdout.decode("utf-8") == "still here\n"
