"""The three frontends driven over their real byte streams, for hostile-input tests.

``lsp_server`` is ``crank serve`` (``python -m crank.lsp``) through the raw frame
client of tests/lsp/wire.py; ``AcpWire`` is ``crank acp`` through raw lines (a real
ACP SDK client would refuse to send most of what these tests send); ``crank_run`` is
``crank run`` as a subprocess. Each points at the loopback model server. Nothing here
is timed: waits are bounded only so that a wedge fails the test instead of hanging it.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from tests.lsp.helpers import provider_for
from tests.lsp.wire import Wire, notification, request, started
from tests.support.model_server import ModelServer

ROOT = Path(__file__).resolve().parents[2]
WEDGE = 60.0
"""How long a wait may take before it counts as a wedge (never reached when it works)."""

BAD_NAME = b"bad\xffname.txt"


def bad_workspace(folder: Path) -> Path:
    """A folder holding a file whose name is not UTF-8, one inside a sub-folder, and a
    file whose content is not UTF-8 either."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(os.path.join(os.fsencode(folder), BAD_NAME), "wb") as handle:
        handle.write(b"needle in a bad name\n")
    sub = os.path.join(os.fsencode(folder), b"d\xfe\xfe")
    os.makedirs(sub, exist_ok=True)
    with open(os.path.join(sub, b"x\x80.py"), "wb") as handle:
        handle.write(b"needle = '\xff\xfe'\n")
    (folder / "ok.txt").write_text("needle\n")
    return folder


def file_tool_calls(prefix: str = "call") -> list[dict[str, Any]]:
    """One reply calling every read-only file tool over the bad folder."""
    return [
        {"id": f"{prefix}_ls", "name": "ls", "arguments": {"path": "."}},
        {"id": f"{prefix}_find", "name": "find", "arguments": {"pattern": "**/*"}},
        {"id": f"{prefix}_grep", "name": "grep", "arguments": {"pattern": "needle"}},
        {"id": f"{prefix}_bash", "name": "bash", "arguments": {"command": "ls; printf '\\377\\n'"}},
    ]


# -- crank serve -------------------------------------------------------------------------


def lsp_options(
    model: ModelServer, tmp_path: Path, provider: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "provider": provider or provider_for(model.url),
        "sessionDir": str(tmp_path / "sessions"),
        "permissionMode": "autoEdit",
    }


@asynccontextmanager
async def lsp_server(
    tmp_path: Path, model: ModelServer, provider: dict[str, Any] | None = None
) -> AsyncIterator[Wire]:
    """``crank serve`` on ``tmp_path/p``, initialized; closed (and its exit code
    checked) on the way out. ``provider``: other than the loopback as OpenAI."""
    wire = await started(tmp_path, lsp_options(model, tmp_path, provider))
    try:
        yield wire
    finally:
        if wire.process.returncode is None:
            wire.send(request("bye", "shutdown"))
            await wire.answer("bye", within=WEDGE)
            wire.send(notification("exit"))
            code = await wire.close()
            assert code == 0, bytes(wire.stderr[-3000:]).decode("utf-8", "replace")


def lsp_events(wire: Wire, run_id: str) -> list[dict[str, Any]]:
    return [
        m["params"]["event"]
        for m in wire.messages
        if isinstance(m, dict)
        and m.get("method") == "crank/event"
        and m["params"].get("runId") == run_id
    ]


async def lsp_wait(wire: Wire, condition: Callable[[], bool], what: str) -> None:
    async def loop() -> None:
        while not condition():
            if wire._reader.done():
                raise AssertionError(f"the server closed stdout waiting for {what}")
            wire._arrived.clear()
            await wire._arrived.wait()

    try:
        await asyncio.wait_for(loop(), WEDGE)
    except TimeoutError:
        tail = bytes(wire.stderr[-3000:]).decode("utf-8", "replace")
        raise AssertionError(f"wedged waiting for {what}; stderr: {tail}") from None


async def lsp_call(wire: Wire, msg_id: str, method: str, params: Any) -> dict[str, Any]:
    wire.send(request(msg_id, method, params))
    return await wire.answer(msg_id, within=WEDGE)


async def lsp_run(wire: Wire, msg_id: str, text: str) -> list[dict[str, Any]]:
    """One prompt to its ``agent_settled``: the run's events."""
    wire.send(request(msg_id, "crank/prompt", {"text": text}))
    answer = await wire.answer(msg_id, within=WEDGE)
    assert "result" in answer, answer
    run_id = answer["result"]["runId"]
    await lsp_wait(
        wire,
        lambda: any(e["type"] == "agent_settled" for e in lsp_events(wire, run_id)),
        f"agent_settled of {run_id}",
    )
    return lsp_events(wire, run_id)


# -- crank acp ---------------------------------------------------------------------------


def acp_env(model: ModelServer, home: Path) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "CRANK_"))
    }
    home.mkdir(parents=True, exist_ok=True)
    env.update(
        PYTHONPATH=str(ROOT / "server"),
        OPENAI_BASE_URL=model.url + "/v1",
        OPENAI_API_KEY="sk-test-acp",
        CRANK_MODEL="test-model",
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
    )
    return env


class AcpWire:
    """``crank acp`` over raw lines. Every line it writes must be UTF-8 JSON (checked
    as it arrives); permission questions are answered with ``answer_permission``."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.messages: list[dict[str, Any]] = []
        self.answers: dict[Any, list[dict[str, Any]]] = {}
        self.stderr = bytearray()
        self.answer_permission: Callable[[Any, dict[str, Any]], dict[str, Any]] = (
            lambda msg_id, params: {
                "jsonrpc": "2.0",
                "id": msg_id,
                "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}},
            }
        )
        self._arrived = asyncio.Event()
        self._reader = asyncio.ensure_future(self._read())
        self._reader.add_done_callback(lambda _: self._arrived.set())
        self._errors = asyncio.ensure_future(self._read_stderr())

    async def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        while line := await stdout.readline():
            message = json.loads(line.decode("utf-8"))  # strict: any other byte fails
            self.messages.append(message)
            if "method" in message and "id" in message:
                self.send_json(self.answer_permission(message["id"], message.get("params") or {}))
            elif "method" not in message:
                self.answers.setdefault(message.get("id"), []).append(message)
            self._arrived.set()

    async def _read_stderr(self) -> None:
        stderr = self.process.stderr
        assert stderr is not None
        while chunk := await stderr.read(1 << 16):
            self.stderr += chunk

    def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)

    def send_json(self, message: dict[str, Any]) -> None:
        self.send(json.dumps(message).encode() + b"\n")

    def request(self, msg_id: Any, method: str, params: Any) -> None:
        self.send_json({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})

    async def wait(self, condition: Callable[[], bool], what: str) -> None:
        async def loop() -> None:
            while not condition():
                if self._reader.done():
                    self._reader.result()
                    raise AssertionError(f"crank acp closed stdout waiting for {what}")
                self._arrived.clear()
                await self._arrived.wait()

        try:
            await asyncio.wait_for(loop(), WEDGE)
        except TimeoutError:
            tail = bytes(self.stderr[-3000:]).decode("utf-8", "replace")
            raise AssertionError(f"wedged waiting for {what}; stderr: {tail}") from None

    async def answer(self, msg_id: Any) -> dict[str, Any]:
        await self.wait(lambda: msg_id in self.answers, f"the answer to {msg_id!r}")
        return self.answers[msg_id][0]

    async def call(self, msg_id: Any, method: str, params: Any) -> dict[str, Any]:
        self.request(msg_id, method, params)
        return await self.answer(msg_id)

    async def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        code = await asyncio.wait_for(self.process.wait(), WEDGE)
        await asyncio.wait_for(asyncio.gather(self._reader, self._errors), WEDGE)
        return code


@asynccontextmanager
async def acp_agent(
    tmp_path: Path, model: ModelServer, *args: str, initialize: bool = True
) -> AsyncIterator[AcpWire]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "crank.acp",
        "--session-dir",
        str(tmp_path / "acp-sessions"),
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=acp_env(model, tmp_path / "acp-home"),
        cwd=str(tmp_path),
    )
    agent = AcpWire(process)
    try:
        if initialize:
            answer = await agent.call("init", "initialize", {"protocolVersion": 1})
            assert "result" in answer, answer
        yield agent
    finally:
        if process.returncode is None:
            code = await agent.close()
            assert code == 0, bytes(agent.stderr[-3000:]).decode("utf-8", "replace")


async def acp_session(agent: AcpWire, cwd: Path, msg_id: Any = "new") -> str:
    answer = await agent.call(msg_id, "session/new", {"cwd": str(cwd), "mcpServers": []})
    assert "result" in answer, answer
    return str(answer["result"]["sessionId"])


def prompt_params(session_id: str, text: str) -> dict[str, Any]:
    return {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}


# -- crank run ---------------------------------------------------------------------------


def run_env(model: ModelServer, api: str = "openai") -> dict[str, str]:
    keep = {
        k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "CRANK_"))
    }
    keep["PYTHONPATH"] = str(ROOT / "server")
    keep["XDG_CONFIG_HOME"] = keep["XDG_DATA_HOME"] = "/nonexistent-crank-test"
    if api == "openai":
        keep.update(
            CRANK_PROVIDER="openai",
            CRANK_MODEL="test-model",
            OPENAI_API_KEY="sk-test",
            OPENAI_BASE_URL=model.url + "/v1",
        )
    else:
        keep.update(
            CRANK_PROVIDER="anthropic",
            CRANK_MODEL="claude-test",
            ANTHROPIC_API_KEY="sk-ant-test",
            ANTHROPIC_BASE_URL=model.url,
        )
    return keep


def crank_run(
    cwd: Path, model: ModelServer, *args: str, api: str = "openai"
) -> subprocess.CompletedProcess[bytes]:
    """``crank run`` as bytes (its stdout is checked to be UTF-8 by the caller)."""
    return subprocess.run(
        [sys.executable, "-m", "crank.cli", "run", *args],
        cwd=cwd,
        env=run_env(model, api),
        capture_output=True,
        timeout=WEDGE * 2,
    )


def json_lines(stdout: bytes) -> list[dict[str, Any]]:
    """``crank run --json`` output: every line strict UTF-8 JSON."""
    return [json.loads(line.decode("utf-8")) for line in stdout.splitlines()]
