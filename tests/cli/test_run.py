"""``crank run`` as a user runs it: a real subprocess, real files, real HTTP on loopback."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from crank.agent.messages import assistant_message, tool_result, user_message
from crank.session import SessionLog
from tests.support.model_server import ModelServer

ROOT = Path(__file__).resolve().parents[2]


def crank(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "crank.cli", *args],
        cwd=cwd,
        env=env or clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


def clean_env(**extra: str) -> dict[str, str]:
    keep = {
        k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "CRANK_"))
    }
    keep["PYTHONPATH"] = str(ROOT / "server")
    keep["XDG_CONFIG_HOME"] = keep["XDG_DATA_HOME"] = "/nonexistent-crank-test"
    keep.update(extra)
    return keep


def loopback_env(server: ModelServer) -> dict[str, str]:
    """``clean_env`` pointed at the loopback model server as an OpenAI provider."""
    return clean_env(
        CRANK_PROVIDER="openai",
        CRANK_MODEL="test-model",
        OPENAI_API_KEY="sk-test",
        OPENAI_BASE_URL=server.url + "/v1",
    )


def script(path: Path, *replies: dict[str, Any]) -> str:
    path.write_text(json.dumps({"replies": list(replies)}))
    return str(path)


def test_prints_only_the_final_answer(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("the secret word is plover\n")
    s = script(
        tmp_path / "s.json",
        {"calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
        {"text": "The word is plover."},
    )
    done = crank(
        tmp_path, "run", "--script", s, "--session-dir", str(tmp_path / "sessions"), "what word?"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "The word is plover.\n"


def test_json_prints_every_event_as_a_line(tmp_path: Path) -> None:
    s = script(tmp_path / "s.json", {"text": "hello"})
    done = crank(
        tmp_path, "run", "--json", "--script", s, "--session-dir", str(tmp_path / "x"), "hi"
    )
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    types = [line["event"]["type"] for line in lines]
    assert types[0] == "agent_start" and types[-1] == "agent_settled"
    assert all(line["runId"] == lines[0]["runId"] for line in lines)
    ends = [line["event"] for line in lines if line["event"]["type"] == "message_end"]
    assert all(end.get("entryId") for end in ends)


def test_an_error_says_error_and_exits_1(tmp_path: Path) -> None:
    s = script(tmp_path / "s.json", {"error": "the provider fell over"})
    done = crank(tmp_path, "run", "--script", s, "--session-dir", str(tmp_path / "x"), "hi")
    assert done.returncode == 1
    assert done.stderr.strip().endswith("Error: the provider fell over")
    assert done.stdout == ""


def test_a_length_cut_is_said(tmp_path: Path) -> None:
    s = script(tmp_path / "s.json", {"text": "half an ans", "stopReason": "length"})
    done = crank(tmp_path, "run", "--script", s, "--session-dir", str(tmp_path / "x"), "hi")
    assert done.returncode == 0
    assert "cut short" in done.stderr and done.stdout == "half an ans\n"


def test_nothing_configured_says_what_to_set(tmp_path: Path) -> None:
    done = crank(tmp_path, "run", "hi")
    assert done.returncode == 1
    assert done.stderr.startswith("Error: ")
    assert "ANTHROPIC_API_KEY" in done.stderr and "OPENAI_BASE_URL" in done.stderr


def test_continue_resumes_the_newest_session(tmp_path: Path) -> None:
    sessions = str(tmp_path / "sessions")
    first = script(tmp_path / "a.json", {"text": "noted"})
    crank(tmp_path, "run", "--script", first, "--session-dir", sessions, "remember: kestrel")
    echo = script(tmp_path / "b.json", {"text": "ok"})
    done = crank(
        tmp_path,
        "run",
        "--json",
        "--continue",
        "--script",
        echo,
        "--session-dir",
        sessions,
        "what?",
    )
    assert done.returncode == 0
    files = list(Path(sessions).rglob("*.jsonl"))
    assert len(files) == 1
    body = files[0].read_text()
    assert "remember: kestrel" in body and '"content":"what?"' in body


def test_ctrl_c_aborts_cleanly_with_130_and_keeps_the_session(tmp_path: Path) -> None:
    s = script(
        tmp_path / "s.json", {"text": "I am thinking very slowly about this", "hangAfter": 2}
    )
    sessions = tmp_path / "sessions"
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "crank.cli",
            "run",
            "--json",
            "--script",
            s,
            "--session-dir",
            str(sessions),
            "hi",
        ],
        cwd=tmp_path,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    for line in child.stdout:
        if json.loads(line)["event"]["type"] == "message_update":
            break
    child.send_signal(signal.SIGINT)
    rest, err = child.communicate(timeout=10)
    assert child.returncode == 130, err
    assert json.loads(rest.splitlines()[-1])["event"]["type"] == "agent_settled"
    saved = [json.loads(line) for line in next(sessions.rglob("*.jsonl")).read_text().splitlines()]
    assert saved[-1]["message"]["stopReason"] == "aborted"


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_against_a_real_http_model_server(tmp_path: Path, api: str) -> None:
    replies = [{"toolCalls": [{"name": "ls", "arguments": {}}]}, {"text": "Two files here."}]
    (tmp_path / "a.py").write_text("")
    with ModelServer({"replies": replies}) as server:
        base = server.url + ("/v1" if api == "openai" else "")
        env = clean_env(
            CRANK_PROVIDER=api,
            CRANK_MODEL="test-model",
            **{f"{api.upper()}_API_KEY": "sk-test-secret", f"{api.upper()}_BASE_URL": base},
        )
        done = crank(
            tmp_path, "run", "--session-dir", str(tmp_path / "s"), "what is here?", env=env
        )
        bodies = server.requests
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Two files here.\n"
    assert len(bodies) == 2
    session_text = next((tmp_path / "s").rglob("*.jsonl")).read_text()
    assert "sk-test-secret" not in session_text and "sk-test-secret" not in done.stderr


def test_a_failed_model_request_is_reported_once(tmp_path: Path) -> None:
    """The provider's own warning used to print before the ``Error:`` line, saying the
    same thing twice; the command now owns the report."""
    with ModelServer({"replies": [{"status": 400, "errorMessage": "no such model"}]}) as server:
        env = clean_env(OPENAI_BASE_URL=server.url + "/v1", CRANK_MODEL="m")
        done = crank(tmp_path, "run", "--session-dir", str(tmp_path / "x"), "hi", env=env)
    assert done.returncode == 1
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), done.stderr


def test_nothing_configured_leads_with_one_variable_per_line(tmp_path: Path) -> None:
    done = crank(tmp_path, "run", "hi")
    lines = done.stderr.splitlines()
    assert lines[0].startswith("Error: No model provider")
    assert lines[1].strip().startswith("ANTHROPIC_API_KEY=")
    assert max(len(line) for line in lines) <= 110


def test_an_edit_is_on_disk_before_the_next_command(tmp_path: Path) -> None:
    """Issue 14, for ``crank run`` (no editor): the edit's bash sees the edited file."""
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    fix = {"path": "calc.py", "oldText": "return a - b", "newText": "return a + b"}
    s = script(
        tmp_path / "s.json",
        {"calls": [{"name": "edit", "arguments": fix}]},
        {"calls": [{"name": "bash", "arguments": {"command": "grep return calc.py"}}]},
        {"text": "Fixed."},
    )
    done = crank(
        tmp_path, "run", "--json", "--script", s, "--session-dir", str(tmp_path / "s"), "fix it"
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line)["event"] for line in done.stdout.splitlines()]
    results = [e["result"] for e in events if e["type"] == "tool_execution_end"]
    assert not results[0]["isError"], results[0]
    assert results[1]["content"].strip() == "return a + b"


def test_a_skill_command_is_expanded_and_built_ins_are_refused(tmp_path: Path) -> None:
    skill = tmp_path / ".crank" / "skills" / "words" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: words\ndescription: Count words\n---\nCount them.\n")
    with ModelServer({"replies": [{"text": "Three."}]}) as server:
        env = loopback_env(server)
        sessions = str(tmp_path / "s")
        done = crank(
            tmp_path, "run", "--trust", "--session-dir", sessions, "/skill:words", "a.txt", env=env
        )
        refused = crank(tmp_path, "run", "--session-dir", sessions, "/compact", env=env)
        unknown = crank(tmp_path, "run", "--session-dir", sessions, "/nope", env=env)
        bodies = server.requests
    assert done.returncode == 0, done.stderr
    sent = bodies[0]["body"]["messages"][-1]["content"]
    assert sent.startswith('<skill name="words"') and sent.endswith("</skill>\n\na.txt")
    saved = [json.loads(line) for line in next((tmp_path / "s").rglob("*.jsonl")).open()]
    assert saved[1]["message"]["typed"] == "/skill:words a.txt"
    assert refused.returncode == 1 and "crank run does not perform it" in refused.stderr
    assert unknown.returncode == 1 and "unknown command /nope" in unknown.stderr
    assert len(bodies) == 1


def test_a_continued_compacted_session_offers_recall(tmp_path: Path) -> None:
    """Issue 19: ``crank run --session`` of a session a compaction summarised offers
    ``recall`` as the editor does, and it returns the compacted text word for word."""
    error = "FAILED tests/test_io.py::test_write - OSError: [Errno 28] No space left"

    async def compacted() -> Path:
        with SessionLog.create(tmp_path / "sessions", str(tmp_path)) as log:
            log.append_message_sync(user_message("run the tests"))
            call = {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {}}
            log.append_message_sync(assistant_message([call], stop_reason="toolUse"))
            log.append_message_sync(tool_result("c1", "bash", f"collected 3\n{error}\n"))
            log.append_message_sync(assistant_message([{"type": "text", "text": "It failed."}]))
            kept = log.append_message_sync(user_message("fix it later"))
            await log.append_compaction("The first test run failed.", kept, 1000)
            return log.path

    session = asyncio.run(compacted())
    s = script(
        tmp_path / "s.json",
        {"calls": [{"name": "recall", "arguments": {"query": "Errno 28"}}]},
        {"text": "Found it."},
    )
    done = crank(tmp_path, "run", "--json", "--script", s, "--session", str(session), "the error?")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line)["event"] for line in done.stdout.splitlines()]
    results = [e["result"] for e in events if e["type"] == "tool_execution_end"]
    assert not results[0]["isError"], results[0]
    assert error in results[0]["content"]


def test_a_note_saved_by_one_crank_run_is_listed_and_read_by_the_next(tmp_path: Path) -> None:
    """Issue 19: notes work in ``crank run`` too: the first run saves one, the second
    (``--continue``, a new process) is sent its key at the end of the request and reads
    the text back."""
    note = "the fixtures live in tests/data, not tests/fixtures"
    replies = [
        {"toolCalls": [{"name": "note_save", "arguments": {"key": "fixtures", "text": note}}]},
        {"text": "Saved."},
        {"toolCalls": [{"name": "note_read", "arguments": {"key": "fixtures"}}]},
        {"text": "They are in tests/data."},
    ]
    with ModelServer({"replies": replies}) as server:
        env = loopback_env(server)
        sessions = str(tmp_path / "s")
        first = crank(tmp_path, "run", "--session-dir", sessions, "where are fixtures?", env=env)
        second = crank(
            tmp_path, "run", "--continue", "--session-dir", sessions, "--json", "again?", env=env
        )
        bodies = server.requests
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert len(bodies) == 4
    tools = [tool["function"]["name"] for tool in bodies[0]["body"]["tools"]]
    assert "note_save" in tools and "note_read" in tools
    listed = bodies[2]["body"]["messages"][-1]
    assert listed["role"] == "user" and "fixtures" in listed["content"]
    assert note not in listed["content"], "keys only"
    events = [json.loads(line)["event"] for line in second.stdout.splitlines()]
    results = [e["result"] for e in events if e["type"] == "tool_execution_end"]
    assert results and note in results[0]["content"] and not results[0]["isError"]
