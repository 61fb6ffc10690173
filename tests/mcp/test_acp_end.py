"""After an ACP connection ends without a word, no MCP server process is left.

ACP has no shutdown request: a client that is done closes the agent's stdin, and a
client that crashes or is killed closes it too (it held the pipe's one end). Either
way ``crank acp`` must end every MCP server it started for the connection's sessions,
and each server's whole process group with it. Checked by pid and by process group
from ``/proc``, after a run that called the echo tool of the real
``@modelcontextprotocol/server-everything``, for it and for the odd FastMCP server's
``parent`` mode (a child in its group that ignores the end of its input: left alone,
it would outlive everything).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.acp.helpers import agent_env
from tests.support.model_server import ModelServer

from .acp_client import READY, open_agent
from .servers import alive, everything, odd
from .test_frontends import GUARD_S, echo_script

CLIENT = Path(__file__).resolve().parent / "acp_client.py"


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, process group) of a live process; None when gone or a zombie."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] == "Z" else (int(fields[1]), int(fields[2]))


def _processes() -> Iterator[int]:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            yield int(entry)


def mcp_children(agent: int) -> list[int]:
    """The agent's MCP server processes: its children that lead a process group of
    their own (each server is started in a new session; nothing else the agent runs
    here is)."""
    found = []
    for pid in _processes():
        stat = _stat(pid)
        if stat is not None and stat[0] == agent and stat[1] == pid:
            found.append(pid)
    return sorted(found)


def group(pgid: int) -> list[int]:
    """Every live process of the process group ``pgid``."""
    return [pid for pid in _processes() if (stat := _stat(pid)) is not None and stat[1] == pgid]


def wait_gone(pid: int) -> None:
    """Until ``pid`` (not necessarily our child) has exited: its pidfd becomes readable."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        ready, _, _ = select.select([fd], [], [], GUARD_S)
        assert ready, f"process {pid} did not exit within {GUARD_S} s"
    finally:
        os.close(fd)


@contextmanager
def setting(tmp_path: Path) -> Iterator[tuple[dict[str, str], dict[str, Any], ModelServer]]:
    """The agent's environment, the ACP ``mcpServers`` entry, and the loopback model."""
    home = tmp_path / "home"
    (home / ".config" / "crank").mkdir(parents=True)
    # a loaded machine may take more than the default 5 s to start node: wait for it
    wait = {"mcpStartupWaitMs": GUARD_S * 1000}
    (home / ".config" / "crank" / "config.json").write_text(json.dumps(wait))
    servers = [
        {"name": name, "command": raw["command"], "args": raw["args"], "env": []}
        for name, raw in (("everything", everything()), ("odd", odd("parent")))
    ]
    with ModelServer(echo_script()) as model:
        env = agent_env(model, home)
        yield env, servers, model


def servers_of(agent: int) -> list[int]:
    """The two servers' pids, once the odd one's group holds its sleeping child too: the
    server leads its group as soon as it is started, its child comes once its Python is
    up (a loaded machine kept it waiting past the first look, and this failed)."""
    deadline = time.monotonic() + GUARD_S
    while True:
        pids = mcp_children(agent)
        assert len(pids) == 2, f"expected the two MCP servers under {agent}, found {pids}"
        if max(len(group(pid)) for pid in pids) >= 2:
            return pids
        assert time.monotonic() < deadline, "the odd server's child never joined its group"
        time.sleep(0.05)


def end_left(pids: list[int]) -> dict[int, list[int]]:
    """What is left of the servers and their groups, by group, after ending it (a
    failing test leaves nothing running)."""
    left = {pid: group(pid) for pid in pids if alive(pid) or group(pid)}
    for pgid in left:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    return left


def assert_gone(pids: list[int]) -> None:
    """No server and nothing of its group is left."""
    left = end_left(pids)
    assert left == {}, f"processes of a server's group outlived the agent: {left}"


def test_stdin_closed_without_a_shutdown_ends_every_mcp_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with setting(tmp_path) as (env, servers, model):
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        agent = open_agent(tmp_path, tmp_path / "sessions", servers)
        pids = mcp_children(agent.pid)
        try:
            servers_of(agent.pid)
            assert "mcp__everything__echo" in json.dumps(model.requests[0]["body"]["tools"])
            assert agent.stdin is not None
            agent.stdin.close()  # the client is done: no shutdown, only the end of input
            code = agent.wait(timeout=GUARD_S)
        finally:
            if agent.poll() is None:
                agent.kill()
                agent.wait()
                end_left(pids)
    assert_gone(pids)
    assert code == 0


def test_a_killed_client_leaves_no_mcp_server(tmp_path: Path) -> None:
    with setting(tmp_path) as (env, servers, _model):
        client = subprocess.Popen(
            [sys.executable, str(CLIENT), str(tmp_path), str(tmp_path / "sessions"),
             json.dumps(servers)],
            stdout=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
        )  # fmt: skip
        agent: int | None = None
        pids: list[int] = []
        try:
            assert client.stdout is not None
            word, number = client.stdout.readline().split()
            assert word == READY
            agent = int(number)
            pids = servers_of(agent)
            client.send_signal(signal.SIGKILL)  # the client dies; the agent is not signalled
            client.wait(timeout=GUARD_S)
            wait_gone(agent)
        finally:
            if client.poll() is None:
                client.kill()
            if agent is not None and _stat(agent) is not None:
                os.kill(agent, signal.SIGKILL)
                wait_gone(agent)
                end_left(pids)
    assert_gone(pids)


def test_sigterm_to_the_agent_ends_every_mcp_server_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a client that stops its agent job sends (Neovim's jobstop, so
    codecompanion.nvim's, on quit): SIGTERM. It ends the connection as the end of
    input does, servers and their groups first, rather than killing the agent alone."""
    with setting(tmp_path) as (env, servers, _model):
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        agent = open_agent(tmp_path, tmp_path / "sessions", servers)
        pids = mcp_children(agent.pid)
        try:
            servers_of(agent.pid)
            agent.send_signal(signal.SIGTERM)  # stdin stays open: the signal alone ends it
            code = agent.wait(timeout=GUARD_S)
        finally:
            if agent.poll() is None:
                agent.kill()
                agent.wait()
                end_left(pids)
    assert_gone(pids)
    assert code == 0, f"the agent ended with {code}, not as it does at the end of input"
