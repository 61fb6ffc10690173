"""The exact message sequences of two clients that cannot be installed here, replayed.

codecompanion.nvim and Zed drive ``crank acp`` in ways the SDK clients do not: what
they offer in ``initialize``, ``session/new`` with ``mcpServers: []``, ``session/list``
then ``session/load`` in a new connection (their "resume"), which permission option
they pick (codecompanion: the one whose kind is ``allow_always``), and how they answer
``fs/*`` (codecompanion answers a write with ``null``). The sequences are data in
``clients/*.json``, written down from each client's public source (named in the file);
none of their code is here. Every message is judged against ACP's schema: the agent's
must all be valid; the client's may break it only as the file's ``clientDeviations``
say (that is how the real client behaves, and Crank must cope).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.model_server import ModelServer

from .helpers import agent_env
from .judge import Judge
from .test_acp_wire import Lines

CLIENTS = Path(__file__).parent / "clients"
BEFORE = "FACTOR = 0\nprint(FACTOR)\n"


def filled(value: Any, names: dict[str, str]) -> Any:
    """``value`` with ``$name`` placeholders replaced (``$cwd``, ``$session``)."""
    if isinstance(value, str):
        for name, text in names.items():
            value = value.replace(f"${name}", text)
        return value
    if isinstance(value, list):
        return [filled(item, names) for item in value]
    if isinstance(value, dict):
        return {key: filled(item, names) for key, item in value.items()}
    return value


class Player:
    """One connection of the scripted client: sends its requests in order, each after
    the previous one's answer, and answers the agent's requests as the client does."""

    def __init__(self, agent: subprocess.Popen[str], judge: Judge, answers: dict[str, Any]) -> None:
        assert agent.stdin is not None and agent.stdout is not None
        self.agent, self.stdin, self.lines = agent, agent.stdin, Lines(agent.stdout)
        self.judge, self.answers = judge, answers
        self.next_id = 0
        self.asked: list[dict[str, Any]] = []
        self.updates: list[dict[str, Any]] = []

    def send(self, message: dict[str, Any]) -> None:
        message = {"jsonrpc": "2.0", **message}
        self.judge.see("client", message)
        self.stdin.write(json.dumps(message) + "\n")
        self.stdin.flush()

    def request(self, method: str, params: Any) -> dict[str, Any]:
        self.next_id += 1
        request_id = self.next_id
        self.send({"id": request_id, "method": method, "params": params})
        while True:
            message = json.loads(self.lines.next())
            self.judge.see("agent", message)
            if message.get("id") == request_id and "method" not in message:
                return message
            if message.get("method") == "session/update":
                self.updates.append(message["params"]["update"])
            elif "method" in message and "id" in message:
                self.asked.append(message)
                self.send({"id": message["id"], **self.answer(message)})

    def answer(self, message: dict[str, Any]) -> dict[str, Any]:
        method, params = message["method"], message["params"]
        policy = self.answers[method]
        if method == "session/request_permission":
            kind = policy["chooseKind"]
            chosen = next(o for o in params["options"] if o["kind"] == kind)
            return {"result": {"outcome": {"outcome": "selected", "optionId": chosen["optionId"]}}}
        if method == "fs/read_text_file":
            path = Path(params["path"])
            if path.is_file():
                return {"result": {"content": path.read_text()}}
            if policy["missing"] == "error":
                return {"error": {"code": -32002, "message": f"Resource not found: {path}"}}
            return {"result": policy["missing"]}
        if method == "fs/write_text_file":
            Path(params["path"]).write_text(params["content"])
            return {"result": policy["result"]}
        raise AssertionError(f"the script has no answer for {method}")


@pytest.mark.parametrize("client", ["codecompanion", "zed"])
def test_a_real_clients_sequence_edits_lists_and_resumes(tmp_path: Path, client: str) -> None:
    script = json.loads((CLIENTS / f"{client}.json").read_text())
    folder = tmp_path / "project"
    folder.mkdir()
    calc = folder / "calc.py"
    calc.write_text(BEFORE)
    edits = [
        {"path": "calc.py", "oldText": "FACTOR = 0", "newText": "FACTOR = 1"},
        {"path": "calc.py", "oldText": "FACTOR = 1", "newText": "FACTOR = 2"},
    ]
    model_script = {
        "replies": [
            {"toolCalls": [{"id": "e1", "name": "edit", "arguments": edits[0]}]},
            {"text": "Set to 1."},
            {"toolCalls": [{"id": "e2", "name": "edit", "arguments": edits[1]}]},
            {"text": "Set to 2."},
        ]
    }
    names = {"cwd": str(folder.resolve())}
    judge = Judge()
    players: list[Player] = []
    results: list[list[dict[str, Any]]] = []
    with ModelServer(model_script) as model:
        home = tmp_path / "home"
        home.mkdir()
        for steps in script["connections"]:
            agent = subprocess.Popen(
                [sys.executable, "-m", "crank.acp", "--session-dir", str(tmp_path / "sessions")],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                env=agent_env(model, home),
                cwd=folder,
            )
            player = Player(agent, judge, script["answers"])
            answered: list[dict[str, Any]] = []
            try:
                for step in steps:
                    answer = player.request(step["method"], filled(step["params"], names))
                    answered.append(answer)
                    assert "result" in answer, (step["method"], answer)
                    for name, field in step.get("keep", {}).items():
                        names[name] = answer["result"][field]
            finally:
                player.stdin.close()
                agent.wait(timeout=120)
            players.append(player)
            results.append(answered)
    agent_problems = [v for v in judge.violations if v.startswith("agent")]
    assert agent_problems == [], "\n".join(agent_problems)
    client_problems = [v for v in judge.violations if v.startswith("client")]
    assert len(client_problems) == len(script["clientDeviations"]) * 2, client_problems
    assert calc.read_text() == "FACTOR = 2\nprint(FACTOR)\n"

    first, second = players
    asked = [m for m in first.asked if m["method"] == "session/request_permission"]
    assert asked, "the edit was asked about"
    kinds = [o["kind"] for o in asked[0]["params"]["options"]]
    assert len(set(kinds)) == len(kinds), "one option per kind, as they key them"
    writes = [m for m in first.asked if m["method"] == "fs/write_text_file"]
    assert writes and writes[0]["params"]["content"] == "FACTOR = 1\nprint(FACTOR)\n"
    listed = results[1][1]["result"]["sessions"]
    assert [s["sessionId"] for s in listed] == [names["session"]]
    assert listed[0]["title"].startswith("Set FACTOR to 1")
    replayed = [u for u in second.updates if u["sessionUpdate"] == "user_message_chunk"]
    assert replayed and replayed[0]["content"]["text"].startswith("Set FACTOR to 1")
    assert results[1][3]["result"] == {"stopReason": "end_turn"}
