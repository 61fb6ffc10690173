"""``crank run`` without ``--json`` streams: the reply's text reaches stdout as it
comes, and each tool call is one line on stderr (name, short argument, outcome)."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
from pathlib import Path

from tests.support.model_server import ModelServer

from .test_run import crank, loopback_env

GUARD_SECONDS = 60
"""Only so a broken build fails instead of hanging; nothing is timed."""


def read_until(fd: int, wanted: bytes) -> bytes:
    """Read ``fd`` as bytes arrive until ``wanted`` has been seen (or the pipe ends)."""
    seen = b""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while wanted not in seen:
            assert selector.select(GUARD_SECONDS), f"nothing more on the pipe after {seen!r}"
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            seen += chunk
    return seen


def test_the_first_text_is_on_the_pipe_before_the_reply_ends(tmp_path: Path) -> None:
    """The server sends the first piece of the text, then holds the rest back until
    the client goes away: the piece must be readable from stdout meanwhile (it used to
    be printed only when the run ended). Ctrl-C then ends the run as promised."""
    reply = {"text": "First part. Second part. Third part.", "delayMs": 20, "hangAfter": 2}
    with ModelServer({"replies": [reply]}) as server:
        child = subprocess.Popen(
            [sys.executable, "-m", "crank.cli", "run", "--session-dir", str(tmp_path / "s"), "hi"],
            cwd=tmp_path,
            env=loopback_env(server),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            assert child.stdout is not None
            early = read_until(child.stdout.fileno(), b"First")
            assert early.startswith(b"First"), early
            assert not server.disconnects, "the reply was still under way"
            child.send_signal(signal.SIGINT)
            _rest, err = child.communicate(timeout=GUARD_SECONDS)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
    assert child.returncode == 130, err
    assert b"Second" not in early


def test_each_tool_call_is_one_line_on_stderr_and_stdout_keeps_the_reply(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("plover\n")
    replies = [
        {
            "text": "Let me look.",
            "toolCalls": [{"name": "read", "arguments": {"path": "notes.txt"}}],
        },
        {"toolCalls": [{"name": "read", "arguments": {"path": "missing.txt"}}]},
        {"text": "The word is plover."},
    ]
    with ModelServer({"replies": replies}) as server:
        done = crank(
            tmp_path, "run", "--session-dir", str(tmp_path / "s"), "word?", env=loopback_env(server)
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Let me look.\nThe word is plover.\n"
    lines = [line for line in done.stderr.splitlines() if line.startswith("▸ ")]
    assert len(lines) == 2, done.stderr
    assert lines[0].startswith("▸ read notes.txt → ✓"), lines
    assert lines[1].startswith("▸ read missing.txt → ✗"), lines
