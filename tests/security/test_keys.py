"""No route to a key: the provider keys a Crank process was started with are not in
its environment block (``/proc/PID/environ``), its command line, or anything a
command the agent runs can read, even with the sandbox off. And where no sandbox can
be had, ``crank run`` refuses commands and the editor is asked before each one.

Real processes throughout: ``python -m crank.cli run`` and ``python -m crank.lsp``,
the loopback model server, a bubblewrap that fails like one without user namespaces.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.lsp.helpers import folder, running_server, server_env
from tests.support.model_server import ModelServer
from tests.support.sandbox import no_sandbox_path

from .world import sentinel

REPO = Path(__file__).resolve().parents[2]
SHOW_PARENT = (
    "p=$PPID; case \"$(tr '\\0' ' ' < /proc/$p/cmdline)\" in *reaper.py*) "
    "p=$(cut -d' ' -f4 /proc/$p/stat);; esac; "
    "tr '\\0' '\\n' < /proc/$p/environ; tr '\\0' ' ' < /proc/$p/cmdline"
)
"""Print the environment and command line of Crank, the command's parent (or, for an
unconfined command, its grandparent: the subreaper ``crank.tools.reaper`` between)."""


def run_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = server_env(tmp_path)
    env.update(TMPDIR=str(tmp_path), **extra)
    return env


def test_a_handed_over_key_is_held_in_memory_and_gone_from_environ(tmp_path: Path) -> None:
    key = sentinel("anthropic")
    code = (
        "import os, sys\n"
        "from crank.vendors.secrets import handover, provider_env\n"
        "handover()\n"
        "print(open('/proc/self/environ', 'rb').read().count(sys.argv[1].encode()),\n"
        "      provider_env().get('ANTHROPIC_API_KEY') == sys.argv[1],\n"
        "      'ANTHROPIC_API_KEY' in os.environ, 'CRANK_KEYS_FD' in os.environ)\n"
        "print(sorted(os.listdir('/proc/self/fd')))\n"
    )
    env = run_env(tmp_path, ANTHROPIC_API_KEY=key)
    done = subprocess.run(
        [sys.executable, "-c", code, key], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    first, fds = done.stdout.splitlines()
    assert first == "0 True False False"
    assert json.loads(fds.replace("'", '"')) == ["0", "1", "2", "3"]  # 3: listdir's own


def script_file(path: Path, *replies: dict[str, Any]) -> str:
    path.write_text(json.dumps({"replies": list(replies)}))
    return str(path)


def test_crank_run_without_a_sandbox_hides_its_key_from_commands(tmp_path: Path) -> None:
    key = sentinel("anthropic")
    ws = tmp_path / "ws"
    ws.mkdir()
    replies = [{"toolCalls": [{"name": "bash", "arguments": {"command": SHOW_PARENT}}]}]
    with ModelServer({"replies": [*replies, {"text": "done"}]}) as model:
        env = run_env(tmp_path, ANTHROPIC_API_KEY=key, ANTHROPIC_BASE_URL=model.url)
        done = subprocess.run(
            [sys.executable, "-m", "crank.cli", "run", "--json", "--no-sandbox", "go"],
            cwd=ws,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        results = [
            json.loads(line)["event"]["result"]["content"]
            for line in done.stdout.splitlines()
            if '"tool_execution_end"' in line
        ]
        assert "crank.cli run" in results[0]  # it did read its parent, crank itself
        assert key not in done.stdout + done.stderr
        assert model.requests[0]["headers"]["x-api-key"] == key  # still used, in memory
        sessions = list((tmp_path / "home" / "data").rglob("*.jsonl"))
        assert sessions and all(key not in p.read_text() for p in sessions)


def test_crank_run_refuses_commands_where_there_is_no_sandbox(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    calls = [{"name": "bash", "arguments": {"command": "touch ran.txt"}}]
    script = script_file(tmp_path / "s.json", {"calls": calls}, {"text": "done"})
    env = run_env(tmp_path, PATH=no_sandbox_path(tmp_path / "bin"))
    argv = [sys.executable, "-m", "crank.cli", "run", "--json", "--script", script, "go"]
    done = subprocess.run(argv, cwd=ws, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "no sandbox" in done.stderr and "commands are refused" in done.stderr
    assert not (ws / "ran.txt").exists()
    assert "--no-sandbox" in done.stdout and "user namespaces" in done.stdout
    allowed = subprocess.run(
        [*argv[:4], "--no-sandbox", *argv[4:]],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert allowed.returncode == 0, allowed.stderr
    assert (ws / "ran.txt").exists()


async def test_crank_serve_hides_its_key_from_commands_with_the_sandbox_off(
    tmp_path: Path,
) -> None:
    key = sentinel("openai")
    ws = tmp_path / "ws"
    ws.mkdir()
    replies = [{"toolCalls": [{"name": "bash", "arguments": {"command": SHOW_PARENT}}]}]
    with ModelServer({"replies": [*replies, {"text": "done"}]}) as model:
        # the key is configured together with its endpoint, so it is the one sent there
        env = run_env(tmp_path, OPENAI_API_KEY=key, OPENAI_BASE_URL=f"{model.url}/v1")
        options = {
            "provider": {"api": "openai", "baseUrl": f"{model.url}/v1", "model": "m"},
            "permissionMode": "auto",
            "sandbox": {"mode": "off"},
        }
        async with running_server(tmp_path, [ws], options, env=env) as crank:
            uri = folder(ws).uri
            state = await crank.request("crank/state", {"workspace": uri})
            assert state["sandbox"]["mode"] == "off" and state["sandbox"]["confined"] is False
            started = await crank.request("crank/prompt", {"workspace": uri, "text": "go"})
            events = await crank.settled(started["runId"])
        ends = [e["event"] for e in events if e["event"]["type"] == "tool_execution_end"]
        assert "crank.lsp" in ends[0]["result"]["content"]  # the server's own /proc
        assert key not in json.dumps(crank.events)
        assert model.requests[0]["headers"]["authorization"] == f"Bearer {key}"


async def test_the_editor_is_asked_before_every_unconfined_command(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    call = {"name": "bash", "arguments": {"command": "echo ran"}}
    replies = [{"toolCalls": [call]}, {"toolCalls": [call]}, {"text": "done"}]
    with ModelServer({"replies": replies}) as model:
        env = run_env(tmp_path, PATH=no_sandbox_path(tmp_path / "bin"))
        options = {
            "provider": {"api": "openai", "baseUrl": f"{model.url}/v1", "model": "m"},
            "permissionMode": "auto",
        }
        async with running_server(tmp_path, [ws], options, env=env) as crank:
            crank.answer_permission = lambda asked: {"decision": "allowAlways"}
            uri = folder(ws).uri
            state = await crank.request("crank/state", {"workspace": uri})
            assert state["sandbox"]["available"] is False
            assert state["sandbox"]["confined"] is False
            assert "user namespaces" in state["sandbox"]["detail"]
            started = await crank.request("crank/prompt", {"workspace": uri, "text": "go"})
            await crank.settled(started["runId"])
        asked = crank.permission_requests
        assert [a["toolName"] for a in asked] == ["bash", "bash"]  # auto mode, "always" said
        assert all("No sandbox" in a["warning"] for a in asked)
        assert all(a.get("unconfined") is True for a in asked)  # what crank run reads


async def test_a_key_sent_in_initialization_options_reaches_no_log(tmp_path: Path) -> None:
    key = sentinel("editor")
    ws = tmp_path / "ws"
    ws.mkdir()
    log_file = tmp_path / "server.log"
    with ModelServer({"replies": [{"text": "hello"}]}) as model:
        options = {"provider": {"api": "anthropic", "baseUrl": model.url, "apiKey": key}}
        args = ("--log-file", str(log_file), "--log-level", "DEBUG")
        async with running_server(tmp_path, [ws], options, server_args=args) as crank:
            uri = folder(ws).uri
            started = await crank.request("crank/prompt", {"workspace": uri, "text": "hi"})
            await crank.settled(started["runId"])
            state = await crank.request("crank/state", {"workspace": uri})
        assert model.requests[0]["headers"]["x-api-key"] == key
        assert key not in log_file.read_text("utf-8", errors="replace")
        assert key not in json.dumps(crank.events) + json.dumps(state)


async def test_crank_acp_hides_its_key_from_commands_with_the_sandbox_off(tmp_path: Path) -> None:
    """The ACP frontend is a process entry point too: the key it was started with is
    handed over (gone from its environ) and still reaches the model."""
    import acp

    from tests.acp.helpers import RecordingClient, agent_env

    key = sentinel("openai")
    ws = tmp_path / "ws"
    ws.mkdir()
    replies = [{"toolCalls": [{"name": "bash", "arguments": {"command": SHOW_PARENT}}]}]
    client = RecordingClient()
    with ModelServer({"replies": [*replies, {"text": "done"}]}) as model:
        env = {**agent_env(model, tmp_path), "OPENAI_API_KEY": key, "TMPDIR": str(tmp_path)}
        args = ("--session-dir", str(tmp_path / "s"), "--permission-mode", "auto")
        async with acp.spawn_agent_process(
            client,
            sys.executable,
            "-m",
            "crank.acp",
            *args,
            "--sandbox",
            "off",
            env=env,
            cwd=str(ws),
        ) as (conn, _process):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(ws))
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("go")])
        ended = [u for u in client.of("tool_call_update") if u.status in ("completed", "failed")]
        shown = [u.raw_output["content"] for u in ended]
        assert "crank.acp" in shown[0]  # the agent's own /proc was read
        assert key not in json.dumps([str(u) for _, u in client.updates])
        assert model.requests[0]["headers"]["authorization"] == f"Bearer {key}"
