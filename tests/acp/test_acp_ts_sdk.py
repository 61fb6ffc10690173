"""``crank acp`` driven by the official ACP TypeScript SDK (2.x, pinned by
``ts/package-lock.json``; installed from npm with ``npm ci`` into a cache folder
once per machine), every line of its wire judged against ACP's published schema.

The SDK is the client Zed's TypeScript agents are tested with; it parses what Crank
sends with its own (zod) models, and the raw lines it exchanged are judged here too.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.model_server import ModelServer

from .helpers import agent_env
from .judge import Judge

HERE = Path(__file__).parent / "ts"
FILES = ("package.json", "package-lock.json", "client.mjs")


def installed() -> Path:
    """The pinned SDK and the client script in a cache folder named by their hash."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.skip("node and npm are needed for the TypeScript SDK client")
    digest = hashlib.sha256(b"".join((HERE / name).read_bytes() for name in FILES)).hexdigest()
    folder = Path.home() / ".cache" / "crank-test" / f"acp-ts-sdk-{digest[:12]}"
    if not (folder / "node_modules" / "@agentclientprotocol" / "sdk").is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        for name in FILES:
            shutil.copy(HERE / name, folder / name)
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, f"npm ci failed:\n{done.stderr[-2000:]}"
    return folder


def test_the_typescript_sdk_client_edits_and_lists(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    calc = folder / "calc.py"
    calc.write_text("def add(a, b):\n    return a - b\n")
    fix = {"path": "calc.py", "oldText": "return a - b", "newText": "return a + b"}
    script = {
        "replies": [
            {"toolCalls": [{"id": "c1", "name": "edit", "arguments": fix}]},
            {"text": "Fixed."},
        ]
    }
    sdk = installed()
    out = tmp_path / "out.json"
    with ModelServer(script) as model:
        home = tmp_path / "home"
        home.mkdir()
        env = agent_env(model, home)
        done = subprocess.run(
            [
                "node",
                str(sdk / "client.mjs"),
                sys.executable,
                str(tmp_path / "s"),
                str(folder),
                str(out),
            ],
            env={**env, "PATH": os.environ.get("PATH", "")},
            capture_output=True,
            text=True,
            timeout=150,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text())
    judge = Judge()
    for entry in result["wire"]:
        judge.see(entry["sender"], json.loads(entry["line"]))
    judge.assert_valid()
    assert result["init"]["protocolVersion"] == 1
    assert result["prompt"] == {"stopReason": "end_turn"}
    assert calc.read_text() == "def add(a, b):\n    return a + b\n"
    (question,) = result["asked"]
    diff = question["toolCall"]["content"][0]
    assert diff["oldText"] == "def add(a, b):\n    return a - b\n"
    statuses = [u.get("status") for u in result["updates"] if u.get("toolCallId") == "c1"]
    assert [s for s in statuses if s] == ["pending", "in_progress", "completed"]
    assert [s["sessionId"] for s in result["listed"]["sessions"]] == [
        result["session"]["sessionId"]
    ]
