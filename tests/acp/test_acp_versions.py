"""``initialize``'s version negotiation, judged by ACP's published schema.

The spec: the agent answers the version the client asked for when it supports it, and
otherwise the latest version it supports (Crank: 1); the client then decides whether
to go on. Every answer must itself be a valid ``InitializeResponse`` (a version is a
uint16, so echoing -1 breaks the schema).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.model_server import ModelServer

from .helpers import judged_lines


@pytest.mark.parametrize("asked", [1, 0, -1, 2, 65535, "1", "0.2.0", 1.5])
def test_the_answer_is_the_asked_version_or_the_latest_supported(
    tmp_path: Path, asked: Any
) -> None:
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": asked}}
    ]
    with ModelServer({"replies": []}) as model:
        judge = judged_lines(lines, model, tmp_path)
    answers = [m for m in judge.sent("agent") if m.get("id") == 1]
    assert len(answers) == 1 and "result" in answers[0], answers
    assert answers[0]["result"]["protocolVersion"] == 1
    agent_violations = [v for v in judge.violations if v.startswith("agent")]
    assert agent_violations == []


def test_a_missing_version_is_a_clear_error(tmp_path: Path) -> None:
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}]
    with ModelServer({"replies": []}) as model:
        judge = judged_lines(lines, model, tmp_path)
    (answer,) = judge.sent("agent")
    assert answer["error"]["code"] == -32602 and "protocolVersion" in answer["error"]["message"]
