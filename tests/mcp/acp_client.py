"""A bare ACP client that an editor could be: it starts ``crank acp`` with MCP
servers in ``session/new``, makes it call ``mcp__everything__echo`` (so the server has
surely run), then ends the connection the way a client does when it goes away.

Used in two ways by ``test_acp_end.py``: imported (``open_agent``: the test itself is
the client and closes stdin), and run as a process of its own that prints
``READY <agent pid>`` and then waits to be killed (the client killed, not the agent:
its pipes close because their one holder died).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

READY = "READY"


def _line(request_id: int, method: str, params: Any) -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    return (json.dumps(message) + "\n").encode()


def _answer(out: IO[bytes], request_id: int) -> dict[str, Any]:
    """Read the agent's lines until the answer to ``request_id`` (notifications skipped)."""
    while line := out.readline():
        message = json.loads(line)
        if message.get("id") == request_id and "method" not in message:
            if "error" in message:
                raise AssertionError(f"request {request_id} failed: {message['error']}")
            answer: dict[str, Any] = message["result"]
            return answer
    raise AssertionError(f"the agent closed its output before answering {request_id}")


def open_agent(
    cwd: Path, session_dir: Path, servers: list[dict[str, Any]]
) -> subprocess.Popen[bytes]:
    """``crank acp`` (permission mode auto: no question to answer) with ``servers`` as
    the session's MCP servers, after one prompt whose run called the echo tool.
    The environment (the loopback model's URL) is this process's."""
    agent = subprocess.Popen(
        [sys.executable, "-m", "crank.acp", "--session-dir", str(session_dir),
         "--permission-mode", "auto"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=cwd,
    )  # fmt: skip
    assert agent.stdin is not None and agent.stdout is not None
    agent.stdin.write(_line(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}}))
    agent.stdin.write(_line(2, "session/new", {"cwd": str(cwd), "mcpServers": servers}))
    agent.stdin.flush()
    _answer(agent.stdout, 1)
    session = _answer(agent.stdout, 2)["sessionId"]
    prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "use the echo tool"}]}
    agent.stdin.write(_line(3, "session/prompt", prompt))
    agent.stdin.flush()
    assert _answer(agent.stdout, 3)["stopReason"] == "end_turn"
    return agent


def main(argv: list[str]) -> int:
    cwd, session_dir, servers = Path(argv[0]), Path(argv[1]), json.loads(argv[2])
    agent = open_agent(cwd, session_dir, servers)
    print(f"{READY} {agent.pid}", flush=True)
    while True:  # until killed: the agent's pipes close with this process
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
