"""The sandbox against the real bubblewrap: what a confined command can and cannot do.

Skipped where bubblewrap does not work (the probe's reason is the skip reason), and
failed there when ``CI`` is set (tests/support/required.py); ``./dev`` installs it on
Debian when it is missing and it can (root).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from crank.agent.tools import Tool
from crank.tools import ToolContext, standard_tools
from crank.tools.sandbox import SandboxSettings, probe
from tests.support.sandbox import no_sandbox_path

from .conftest import call

needs_bwrap = pytest.mark.requires("sandbox")  # skipped without it; failed without it in CI


def confined(root: Path, tmp_path: Path, **settings: object) -> list[Tool]:
    chosen = SandboxSettings(**settings)  # type: ignore[arg-type]
    home = tmp_path / "home"
    ctx = ToolContext(
        root,
        output_dir=tmp_path / "out",
        sandbox=lambda: chosen,
        protected=(home / ".ssh", home / ".netrc"),
    )
    return standard_tools(ctx)


@needs_bwrap
async def test_the_workspace_is_writable_and_nothing_else(root: Path, tmp_path: Path) -> None:
    tools = confined(root, tmp_path)
    (tmp_path / "sibling").mkdir()
    result = await call(
        tools,
        "bash",
        {"command": "echo hi > made.txt; touch ../escaped.txt; touch ../sibling/x; echo done"},
    )
    assert (root / "made.txt").read_text() == "hi\n"
    assert not (tmp_path / "escaped.txt").exists()
    assert not (tmp_path / "sibling" / "x").exists()
    assert result.content.count("Read-only file system") == 2


@needs_bwrap
async def test_read_only_mode_protects_the_workspace_too(root: Path, tmp_path: Path) -> None:
    tools = confined(root, tmp_path, mode="read-only")
    (root / "kept.txt").write_text("kept\n")
    result = await call(tools, "bash", {"command": "cat kept.txt; echo x > kept.txt"})
    assert result.is_error and "Read-only file system" in result.content
    assert result.content.startswith("kept")
    assert (root / "kept.txt").read_text() == "kept\n"


@needs_bwrap
async def test_tmp_is_private_and_thrown_away(root: Path, tmp_path: Path) -> None:
    tools = confined(root, tmp_path)
    name = f"crank-private-{os.getpid()}"
    result = await call(tools, "bash", {"command": f"echo x > /tmp/{name}; cat /tmp/{name}"})
    assert result.content == "x"
    assert name not in os.listdir("/tmp")


@needs_bwrap
async def test_no_ancestor_is_visible(root: Path, tmp_path: Path) -> None:
    tools = confined(root, tmp_path)
    command = f"test -e /proc/{os.getpid()} && echo visible; ls /proc | grep -c '^[0-9]'"
    result = await call(tools, "bash", {"command": command})
    assert "visible" not in result.content
    assert int(result.content.split()[-1]) <= 5  # bwrap's init, the shell, ls, grep


@needs_bwrap
async def test_secret_places_read_empty(root: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY")
    (home / ".netrc").write_text("password hunter2")
    tools = confined(root, tmp_path)
    command = f"ls -A {home}/.ssh; cat {home}/.netrc; echo key > {home}/.ssh/new; echo end"
    result = await call(tools, "bash", {"command": command})
    assert "PRIVATE" not in result.content and "hunter2" not in result.content
    assert "Read-only file system" in result.content
    assert not (home / ".ssh" / "new").exists()


async def _listener() -> tuple[asyncio.Server, int]:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"hello from the host\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


@needs_bwrap
@pytest.mark.parametrize("network", [False, True])
async def test_the_network_is_off_unless_allowed(root: Path, tmp_path: Path, network: bool) -> None:
    server, port = await _listener()
    async with server:
        tools = confined(root, tmp_path, network=network)
        command = f"exec 3<>/dev/tcp/127.0.0.1/{port} && head -1 <&3"
        result = await call(tools, "bash", {"command": command})
    assert ("hello from the host" in result.content) is network


async def test_the_probe_says_why_there_is_no_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", no_sandbox_path(tmp_path / "bin"))
    probe.cache_clear()
    try:
        status = probe()
    finally:
        probe.cache_clear()
    assert not status.available
    assert "user namespaces" in status.detail


async def test_off_runs_unconfined(root: Path, tmp_path: Path) -> None:
    tools = confined(root, tmp_path, mode="off")
    result = await call(tools, "bash", {"command": "touch ../outside.txt && echo ok"})
    assert result.content == "ok" and (tmp_path / "outside.txt").exists()


async def allow_outside(path: Path, call: object) -> bool:
    return True


async def test_file_tools_refuse_secrets_even_where_leaving_is_allowed(
    root: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY")
    (root / "link").symlink_to(home / ".ssh" / "id_rsa")
    (tmp_path / "fine.txt").write_text("not a secret\n")
    ctx = ToolContext(root, outside=allow_outside, protected=(home / ".ssh",))
    tools = standard_tools(ctx)
    assert (await call(tools, "read", {"path": str(tmp_path / "fine.txt")})).content.startswith(
        "not a secret"
    )
    for args in (
        {"path": str(home / ".ssh" / "id_rsa")},
        {"path": "link"},
        {"path": "/proc/self/environ"},
        {"path": f"/proc/{os.getpid()}/cmdline"},
    ):
        result = await call(tools, "read", args)
        assert result.is_error and "no tool may read or change it" in result.content
        assert "PRIVATE" not in result.content
    wrote = await call(tools, "write", {"path": "link", "content": "x"})
    assert wrote.is_error and (home / ".ssh" / "id_rsa").read_text() == "PRIVATE KEY"
    listed = await call(tools, "ls", {"path": str(home / ".ssh")})
    assert listed.is_error


async def test_commands_never_see_credentials_by_name(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "NPM_TOKEN", "DB_PASSWORD"):
        monkeypatch.setenv(name, f"{name}-never-shown")
    monkeypatch.setenv("SSH_AUTH_SOCK", "/run/agent.sock")
    monkeypatch.setenv("TOKENIZER", "kept")
    for mode in ("off", "workspace-write"):
        if mode != "off" and not probe().available:
            continue
        result = await call(confined(root, tmp_path, mode=mode), "bash", {"command": "env"})
        assert "never-shown" not in result.content and "agent.sock" not in result.content
        assert "TOKENIZER" not in result.content  # an allow-list: no name is kept by luck


@needs_bwrap
@pytest.mark.parametrize("network", [False, True])
async def test_daemon_sockets_in_run_are_out_of_reach(
    root: Path, tmp_path: Path, network: bool
) -> None:
    # A read-only mount does not stop connect(): reaching /run/docker.sock or the
    # user's agents in /run/user/UID would undo every other confinement.
    socket_path = Path(f"/run/crank-test-{os.getpid()}-{network}.sock")
    try:
        server = await asyncio.start_unix_server(lambda r, w: w.close(), str(socket_path))
    except OSError as exc:
        pytest.skip(f"cannot make a socket in /run here: {exc}")
    async with server:
        tools = confined(root, tmp_path, network=network)
        command = f"test -e {socket_path} && echo visible; ls /run | wc -l"
        result = await call(tools, "bash", {"command": command})
    await asyncio.to_thread(socket_path.unlink, missing_ok=True)
    assert "visible" not in result.content
