"""``crank acp``'s log holds no key, whatever it is sent.

The real agent at ``--log-level debug`` with ``--log-file``: a ``session/cancel`` for an
unknown session is logged with its params, and those params carry a key (a client
bug, or a hostile client). Before, the key was written to the log as it came.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.model_server import ModelServer

from .helpers import agent_env

KEY = "sk-ant-api03-not-for-the-acp-log-0123456789"


def test_no_key_in_the_acp_log(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    log_file = tmp_path / "acp.log"
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {
            "jsonrpc": "2.0",
            "method": "session/cancel",
            "params": {"sessionId": "no", "apiKey": KEY},
        },
        {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": KEY}},
    ]
    with ModelServer({"replies": []}) as model:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "crank.acp",
                "--log-level",
                "debug",
                "--log-file",
                str(log_file),
            ],
            input="".join(json.dumps(line) + "\n" for line in lines),
            capture_output=True,
            text=True,
            env=agent_env(model, home),
            cwd=tmp_path,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    logged = log_file.read_text()
    assert "session/cancel for an unknown session" in logged  # the params were logged
    assert KEY not in logged and "sk-test-acp" not in logged
    assert KEY not in done.stderr
