"""Driving ``crank acp`` with the official ACP Python SDK's client side.

The SDK (``agent-client-protocol``, module ``acp``) is a client nobody here wrote: it
spawns the real ``crank acp`` over stdio and parses every answer and notification into
its schema models (generated from ACP's JSON schema), so a message Crank sends that
breaks the schema fails the test where it arrives. ``RecordingClient`` is the editor:
it records each update, and answers permission questions from a list.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import acp
from acp import schema

from tests.support.model_server import ModelServer

ROOT = Path(__file__).resolve().parents[2]


class RecordingClient:
    """An ACP client: keeps every ``session/update`` and answers permissions in turn."""

    def __init__(self, answers: list[str | None] | None = None) -> None:
        self.updates: list[tuple[str, Any]] = []
        self.answers = list(answers or [])
        self.questions: list[schema.RequestPermissionRequest] = []
        self.asked = asyncio.Event()
        self.changed = asyncio.Event()

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> schema.RequestPermissionResponse:
        self.questions.append(
            schema.RequestPermissionRequest(
                session_id=session_id, tool_call=tool_call, options=options
            )
        )
        self.asked.set()
        choice = self.answers.pop(0) if self.answers else "wait"
        if choice == "wait":  # never answered: the test cancels the turn
            await asyncio.Event().wait()
        if choice is None:
            return schema.RequestPermissionResponse(
                outcome=schema.DeniedOutcome(outcome="cancelled")
            )
        return schema.RequestPermissionResponse(
            outcome=schema.AllowedOutcome(outcome="selected", option_id=choice)
        )

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        self.changed.set()

    def kinds(self) -> list[str]:
        return [update.session_update for _, update in self.updates]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(
            update.content.text for _, update in self.updates if update.session_update == kind
        )

    def of(self, kind: str) -> list[Any]:
        return [update for _, update in self.updates if update.session_update == kind]

    async def wait_for(self, predicate: Any, what: str, within: float = 120) -> None:
        async def loop() -> None:
            while not predicate():
                self.changed.clear()
                await self.changed.wait()

        try:
            await asyncio.wait_for(loop(), within)
        except TimeoutError:
            raise AssertionError(f"timed out waiting for {what}; updates: {self.kinds()}") from None


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
    client: RecordingClient,
    *args: str,
    model_id: str = "test-model",
    answers: list[Any] | None = None,
    capabilities: schema.ClientCapabilities | None = None,
) -> AsyncIterator[Any]:
    """A running ``crank acp`` with an initialized connection from the SDK's client
    (``answers`` receives the ``initialize`` answer)."""
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
    ) as (connection, _process):
        answer = await connection.initialize(
            protocol_version=acp.PROTOCOL_VERSION, client_capabilities=capabilities
        )
        assert answer.protocol_version == 1
        if answers is not None:
            answers.append(answer)
        yield connection
