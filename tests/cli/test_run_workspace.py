"""``crank run`` drives the same workspace as ``crank serve`` and ``crank acp``: what
the editor gets by construction (compaction, the context policies), ``crank run``
gets too. Real subprocesses against the loopback model server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.model_server import ModelServer

from .test_run import crank, loopback_env

SUMMARY = "Goal: answer the numbered questions. Progress: the earlier ones are answered."


def small_window_env(server: ModelServer, tmp_path: Path, window: int) -> dict[str, str]:
    """The loopback provider, with a user config file that gives it a small window."""
    config = tmp_path / "config"
    (config / "crank").mkdir(parents=True)
    (config / "crank" / "config.json").write_text(
        json.dumps({"provider": {"contextWindow": window}})
    )
    return {**loopback_env(server), "XDG_CONFIG_HOME": str(config)}


def events_of(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line)["event"] for line in stdout.splitlines()]


def test_a_long_conversation_is_compacted_in_crank_run(tmp_path: Path) -> None:
    filler = "word " * 600
    script = {
        "replies": [{"text": f"Answer {n}: {filler}"} for n in range(6)],
        "rules": [{"lastUserContains": "<conversation>", "reply": {"text": SUMMARY}}],
        "estimateUsage": True,
    }
    project = tmp_path / "project"
    project.mkdir()
    sessions = str(tmp_path / "sessions")
    seen: list[dict[str, Any]] = []
    with ModelServer(script) as server:
        env = small_window_env(server, tmp_path, 2_500)
        for n in range(5):
            again = ["--continue"] if n else []
            done = crank(
                project,
                "run",
                "--json",
                *again,
                "--session-dir",
                sessions,
                f"question {n}",
                env=env,
            )
            assert done.returncode == 0, done.stderr
            seen += events_of(done.stdout)
    kinds = [event["type"] for event in seen]
    assert "compaction_start" in kinds
    ends = [event for event in seen if event["type"] == "compaction_end"]
    assert any(end["compacted"] for end in ends), ends
    (session,) = Path(sessions).rglob("*.jsonl")
    entries = [json.loads(line) for line in session.read_text().splitlines()]
    assert any(entry.get("type") == "compaction" for entry in entries)


def test_nobody_is_asked_a_write_runs_and_a_path_outside_is_refused(tmp_path: Path) -> None:
    """The approvals go through the workspace's router to ``crank run``'s policy: a
    write in the current directory is allowed, a path outside it refused, saying so."""
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "secret.txt").write_text("outside\n")
    replies = [
        {"toolCalls": [{"name": "write", "arguments": {"path": "a.txt", "content": "hi\n"}}]},
        {"toolCalls": [{"name": "read", "arguments": {"path": "../secret.txt"}}]},
        {"text": "Done."},
    ]
    with ModelServer({"replies": replies}) as server:
        done = crank(
            project,
            "run",
            "--json",
            "--session-dir",
            str(tmp_path / "s"),
            "go",
            env=loopback_env(server),
        )
    assert done.returncode == 0, done.stderr
    results = [e["result"] for e in events_of(done.stdout) if e["type"] == "tool_execution_end"]
    assert not results[0]["isError"] and (project / "a.txt").read_text() == "hi\n"
    assert results[1]["isError"] and "outside" in results[1]["content"]
    assert "crank run keeps to the current directory" in results[1]["content"]
