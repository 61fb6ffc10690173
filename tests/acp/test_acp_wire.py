"""``crank acp`` as a byte stream: every line it writes is checked against ACP's
published JSON schema (version 1, pinned in ``tests/acp/schema``), and a seeded
chaos pass of malformed lines, unknown methods and requests before ``initialize``
finds every request answered exactly once and the agent still working."""

from __future__ import annotations

import json
import queue
import random
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from tests.support.model_server import ModelServer

from .helpers import agent_env
from .judge import Judge

SEED = 20261201
CHAOS_LINES = 3000


def check_line(line: str, sent: dict[Any, str]) -> dict[str, Any]:
    """One line from the agent: valid for ACP's published schema (``judge.Judge``),
    a result judged as the answer to the method ``sent`` names for its id."""
    message = json.loads(line)
    judge = Judge()
    if isinstance(message, dict) and message.get("id") in sent and "method" not in message:
        judge.asked("client", message["id"], sent[message["id"]])
    judge.see("agent", message)
    judge.assert_valid()
    return message


def run_agent(lines: list[str], model: ModelServer, tmp: Path) -> list[str]:
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "crank.acp", "--session-dir", str(tmp / "s")],
        input="".join(line + "\n" for line in lines),
        capture_output=True,
        text=True,
        env=agent_env(model, home),
        cwd=tmp,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.splitlines()


class Lines:
    """The agent's output, line by line, read by a thread: a hung agent fails the test
    (after ``within`` seconds) instead of hanging it. (``select`` on the pipe would
    miss lines already read into the file object's buffer, and wait for ever.)"""

    def __init__(self, stream: Any) -> None:
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: Any) -> None:
        for line in stream:
            self._lines.put(line)
        self._lines.put("")

    def next(self, within: float = 180) -> str:
        try:
            line = self._lines.get(timeout=within)
        except queue.Empty:
            raise AssertionError(f"no line from the agent within {within} s") from None
        assert line, "the agent closed its output"
        return line


def request(request_id: int, method: str, params: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})


def mutations(rng: random.Random, next_id: Any) -> tuple[str, Any]:
    """One hostile line and the id that must be answered (None: no answer due)."""
    i = next_id()
    choice = rng.randrange(12)
    if choice == 0:
        return "{not json", None  # -32700 with id null: counted apart
    if choice == 1:
        return json.dumps([{"jsonrpc": "2.0", "id": i, "method": "initialize"}]), None
    if choice == 2:
        return json.dumps({"jsonrpc": rng.choice(["1.0", 2, None]), "id": i, "method": "x"}), i
    if choice == 3:
        return json.dumps({"jsonrpc": "2.0", "id": i, "method": None}), i
    if choice == 4:
        return json.dumps({"jsonrpc": "2.0", "id": i, "method": f"nope/{i}"}), i
    if choice == 5:
        return request(i, "session/prompt", {"sessionId": "missing", "prompt": []}), i
    if choice == 6:
        return request(i, "session/new", rng.choice([5, "x", [], {"cwd": 3}, None])), i
    if choice == 7:
        return "[" * 5000 + "]" * 5000, None
    if choice == 8:
        return json.dumps({"jsonrpc": "2.0", "method": "session/cancel", "params": 7}), None
    if choice == 9:
        return request(i, "session/set_mode", {"sessionId": 1, "modeId": None}), i
    if choice == 10:
        return json.dumps({"jsonrpc": "2.0", "id": True, "method": "initialize"}), None
    return request(i, "initialize", {"protocolVersion": rng.choice(["1", None, 1.5])}), i


def test_chaos_every_request_answered_once_and_the_agent_still_works(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    counter = iter(range(1000, 10**9))
    sent: dict[Any, str] = {}
    due: list[Any] = []
    lines = [request(1, "session/new", {"cwd": str(tmp_path), "mcpServers": []})]
    sent[1] = "session/new"
    due.append(1)
    for _ in range(CHAOS_LINES):
        line, must = mutations(rng, lambda: next(counter))
        lines.append(line)
        if must is not None:
            sent[must] = str(json.loads(line).get("method"))
            due.append(must)
    lines.append(request(2, "initialize", {"protocolVersion": 1}))
    lines.append(request(3, "session/new", {"cwd": str(tmp_path), "mcpServers": []}))
    sent.update({2: "initialize", 3: "session/new"})
    due.extend([2, 3])
    with ModelServer({"replies": []}) as model:
        out = run_agent(lines, model, tmp_path)
    answered: dict[Any, int] = {}
    for line in out:
        message = check_line(line, sent)
        if "id" in message and "method" not in message:
            answered[message["id"]] = answered.get(message["id"], 0) + 1
    for request_id in due:
        assert answered.get(request_id) == 1, (
            f"request {request_id} answered {answered.get(request_id)}"
        )
    by_id = {json.loads(line).get("id"): json.loads(line) for line in out}
    assert by_id[1]["error"]["code"] == -32600, "a request before initialize (not ACP's -32002)"
    assert "sessionId" in by_id[3]["result"], "a session after all that"


def test_every_line_of_a_whole_turn_is_valid_acp(tmp_path: Path) -> None:
    """A turn with text, a tool call that asks permission (answered from the input, by
    id), and usage: each line checked against the schema."""
    (tmp_path / "a.txt").write_text("old\n")
    edit = {"path": "a.txt", "oldText": "old", "newText": "new"}
    script = {
        "replies": [
            {
                "thinking": "let me see",
                "toolCalls": [{"id": "e1", "name": "edit", "arguments": edit}],
            },
            {"text": "changed"},
        ]
    }
    lines = [
        request(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}}),
        request(2, "session/new", {"cwd": str(tmp_path), "mcpServers": []}),
    ]
    with ModelServer(script) as model:
        home = tmp_path / "home"
        home.mkdir()
        agent = subprocess.Popen(
            [sys.executable, "-m", "crank.acp", "--session-dir", str(tmp_path / "s")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=agent_env(model, home),
            cwd=tmp_path,
        )
        assert agent.stdin is not None and agent.stdout is not None
        sent: dict[Any, str] = {1: "initialize", 2: "session/new", 3: "session/prompt"}
        seen: list[dict[str, Any]] = []
        output = Lines(agent.stdout)
        try:
            for line in lines:
                agent.stdin.write(line + "\n")
            agent.stdin.flush()
            session_id = None
            while True:
                message = check_line(output.next(), sent)
                seen.append(message)
                if message.get("id") == 2:
                    session_id = message["result"]["sessionId"]
                    agent.stdin.write(
                        request(
                            3,
                            "session/prompt",
                            {
                                "sessionId": session_id,
                                "prompt": [{"type": "text", "text": "change a.txt"}],
                            },
                        )
                        + "\n"
                    )
                    agent.stdin.flush()
                if message.get("method") == "session/request_permission":
                    answer = {"outcome": {"outcome": "selected", "optionId": "allow"}}
                    agent.stdin.write(
                        json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": answer}) + "\n"
                    )
                    agent.stdin.flush()
                if message.get("id") == 3:
                    break
        finally:
            agent.stdin.close()
            agent.wait(timeout=60)
    assert seen[-1]["result"] == {"stopReason": "end_turn"}
    kinds = [
        m["params"]["update"]["sessionUpdate"] for m in seen if m.get("method") == "session/update"
    ]
    assert "agent_thought_chunk" in kinds and "tool_call" in kinds and "usage_update" in kinds
    assert (tmp_path / "a.txt").read_text() == "new\n"
    assert agent.returncode == 0
