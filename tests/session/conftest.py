"""Shared helpers for the session tests: real files in tmp_path, plain message data."""

from __future__ import annotations

from pathlib import Path

import pytest

from crank.agent.messages import Message, assistant_message, tool_result, user_message
from crank.session import SessionLog


def say(text: str) -> Message:
    return assistant_message([{"type": "text", "text": text}], timestamp=1)


def ask(text: str) -> Message:
    return user_message(text, timestamp=1)


def call(name: str, arguments: dict[str, object], call_id: str) -> Message:
    block = {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}
    return assistant_message([block], stop_reason="toolUse", timestamp=1)  # type: ignore[list-item]


def result(call_id: str, name: str, text: str) -> Message:
    return tool_result(call_id, name, text)


@pytest.fixture
def log(tmp_path: Path) -> SessionLog:
    session = SessionLog.create(tmp_path / "sessions", cwd=str(tmp_path / "project"))
    yield session  # type: ignore[misc]
    session.close()
