"""Driving ``crank acp`` with the official ACP Python SDK's client side.

The SDK (``agent-client-protocol``, module ``acp``) is a client nobody here wrote: it
spawns the real ``crank acp`` over stdio and parses every answer and notification into
its schema models (generated from ACP's JSON schema), so a message Crank sends that
breaks the schema fails the test where it arrives. ``RecordingClient`` is the editor:
it records each update, and answers permission questions from a list. Every message
of the connection is judged against ACP's published JSON schema (``judge.py``).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import acp
from acp import schema

from tests.support.model_server import ModelServer

from .client_side import REAL_CLIENT_CAPABILITIES, Recorder, RecordingClient
from .judge import Judge

__all__ = ["RecordingClient", "agent_env", "crank_acp", "judged_lines", "tap"]

ROOT = Path(__file__).resolve().parents[2]


def agent_env(model: ModelServer, home: Path, model_id: str = "test-model") -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "CRANK_"))
    }
    env.update(
        PYTHONPATH=str(ROOT / "server"),
        OPENAI_BASE_URL=model.url + "/v1",
        OPENAI_API_KEY="sk-test-acp",
        CRANK_MODEL=model_id,
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
    )
    return env


@contextlib.asynccontextmanager
async def crank_acp(
    model: ModelServer,
    tmp: Path,
    client: Recorder,
    *args: str,
    model_id: str = "test-model",
    answers: list[Any] | None = None,
    capabilities: schema.ClientCapabilities | dict[str, Any] | None = None,
    judge: Judge | None = None,
) -> AsyncIterator[Any]:
    """A running ``crank acp`` with an initialized connection from the SDK's client
    (``answers`` receives the ``initialize`` answer). The client offers what real
    clients do (``REAL_CLIENT_CAPABILITIES``) unless ``capabilities`` says otherwise.
    Every message either side sends is checked against ACP's published schema
    (``judge.Judge``); the connection's end fails the test on any violation."""
    judge = judge if judge is not None else Judge()
    if capabilities is None:
        capabilities = REAL_CLIENT_CAPABILITIES
    if isinstance(capabilities, dict):
        capabilities = schema.ClientCapabilities.model_validate(capabilities)
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    async with acp.spawn_agent_process(
        client,
        sys.executable,
        "-m",
        "crank.acp",
        "--session-dir",
        str(tmp / "sessions"),
        *args,
        env=agent_env(model, home, model_id),
        cwd=str(tmp),
        observers=[tap(judge)],
    ) as (connection, _process):
        answer = await connection.initialize(
            protocol_version=acp.PROTOCOL_VERSION, client_capabilities=capabilities
        )
        assert answer.protocol_version == 1
        if answers is not None:
            answers.append(answer)
        yield connection
    judge.assert_valid()


def tap(judge: Judge) -> Any:
    """An SDK stream observer that shows ``judge`` each message as it crosses the wire
    (incoming: what Crank sent; outgoing: what the client sent)."""

    def observe(event: Any) -> None:
        sender = "agent" if event.direction.value == "incoming" else "client"
        judge.see(sender, event.message)

    return observe


def judged_lines(lines: list[dict[str, Any]], model: ModelServer, tmp: Path) -> Judge:
    """``crank acp`` fed ``lines`` (then end of input); every line both sides sent,
    judged against the schema. The judge holds the messages; the test asserts."""
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "crank.acp", "--session-dir", str(tmp / "sessions")],
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True,
        text=True,
        env=agent_env(model, home),
        cwd=tmp,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    judge = Judge()
    for line in lines:
        judge.see("client", line)
    for line in done.stdout.splitlines():
        judge.see("agent", json.loads(line))
    return judge
