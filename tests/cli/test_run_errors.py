"""``crank run`` and ordinary file-system problems: one line that says what is wrong
and how to fix it, and exit status 1; never a Python traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.model_server import ModelServer

from .test_run import ROOT, clean_env, crank, loopback_env, script


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), done.stderr
    return lines[0]


def test_a_session_file_that_does_not_exist(tmp_path: Path) -> None:
    s = script(tmp_path / "s.json", {"text": "never"})
    missing = str(tmp_path / "nope.jsonl")
    line = one_error_line(crank(tmp_path, "run", "--script", s, "--session", missing, "hi"))
    assert missing in line and "crank sessions list" in line


def test_a_session_dir_that_cannot_be_created(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    s = script(tmp_path / "s.json", {"text": "never"})
    where = str(tmp_path / "afile" / "sessions")
    line = one_error_line(crank(tmp_path, "run", "--script", s, "--session-dir", where, "hi"))
    assert f"--session-dir {where} cannot hold sessions" in line
    assert "pass a folder you can write" in line


def test_a_data_folder_that_cannot_be_written(tmp_path: Path) -> None:
    """Root ignores permission bits, so the data folder is made unusable by being a
    file there; as another user it is a folder without write permission."""
    data = tmp_path / "data"
    if os.geteuid() == 0:
        data.write_text("")
    else:
        (data / "crank").mkdir(parents=True)
        (data / "crank").chmod(0o500)
    s = script(tmp_path / "s.json", {"text": "never"})
    env = clean_env(XDG_DATA_HOME=str(data))
    line = one_error_line(crank(tmp_path, "run", "--script", s, "hi", env=env))
    assert "the data folder for sessions" in line and "--session-dir" in line


def test_a_working_directory_that_was_deleted(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    s = script(tmp_path / "s.json", {"text": "never"})
    # The shell enters the folder and removes it, then becomes crank: its cwd is gone.
    shell = f'cd "{gone}" && rmdir "{gone}" && exec "$0" -m crank.cli run --script "$1" hi'
    done = subprocess.run(
        ["sh", "-c", shell, sys.executable, s],
        cwd=ROOT,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    line = one_error_line(done)
    assert "the current directory no longer exists" in line and "cd into" in line


def test_model_picks_the_model_on_the_configured_provider(tmp_path: Path) -> None:
    with ModelServer({"replies": [{"text": "ok"}]}) as server:
        done = crank(
            tmp_path,
            "run",
            "--model",
            "other-model",
            "--session-dir",
            str(tmp_path / "s"),
            "hi",
            env=loopback_env(server),
        )
        bodies = server.requests
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ok\n"
    assert bodies[0]["body"]["model"] == "other-model"
    (session,) = (tmp_path / "s").rglob("*.jsonl")
    assert "other-model" in json.dumps([json.loads(line) for line in session.open()])


def test_a_provider_host_that_does_not_resolve_is_said_so(tmp_path: Path) -> None:
    """``.invalid`` never resolves (RFC 6761): the error names the host lookup, not
    the port, and is not retried (a wrong name stays wrong)."""
    env = clean_env(
        OPENAI_BASE_URL="http://no-such-host.invalid/v1", OPENAI_API_KEY="sk-x", CRANK_MODEL="m"
    )
    done = crank(tmp_path, "run", "--session-dir", str(tmp_path / "s"), "hi", env=env)
    line = one_error_line(done)
    assert "no-such-host.invalid could not be found" in line
    assert "port" not in line


def test_continue_of_a_torn_session_says_so_instead_of_starting_another(tmp_path: Path) -> None:
    """``--continue`` asks for the newest session: one that cannot be opened is an
    error naming the repair, never quietly replaced by a new session (which is what
    the editor's resume at start-up does)."""
    sessions = tmp_path / "sessions"
    first = script(tmp_path / "a.json", {"text": "noted"})
    assert (
        crank(tmp_path, "run", "--script", first, "--session-dir", str(sessions), "a").returncode
        == 0
    )
    (session,) = sessions.rglob("*.jsonl")
    with session.open("ab") as file:
        file.write(b'{"type":"mes')
    again = script(tmp_path / "b.json", {"text": "never"})
    done = crank(
        tmp_path, "run", "--continue", "--script", again, "--session-dir", str(sessions), "b"
    )
    line = one_error_line(done)
    assert "crank sessions repair" in line
    assert list(sessions.rglob("*.jsonl")) == [session]
