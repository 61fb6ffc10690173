"""What the server imports before it answers ``initialize`` (issue 18: a fast start).

On stdio the answer is sent before pygls and lsprotocol are imported
(``crank/lsp/early.py``); the full server comes next, and the workspace host and
everything under it (the vendors and httpx, the tools, the session log, the prompt
watcher, yaml) when the first folder gets its host, after ``initialized``. The packages that made any submodule import pay for all of them
are lazy (``crank/lazy.py``); these tests keep it so. Speed itself is measured in
``bench/server.py``, not here.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

import pytest

from tests.lsp.helpers import REPO, server_env

LAZY_PACKAGES = ["workspace", "vendors", "prompt", "session", "tools"]
HEAVY = [
    "httpx",
    "httpx_sse",
    "yaml",
    "jsonschema",
    "watchfiles",
    "rich",
    "crank.workspace.host",
    "crank.vendors.transport",
    "crank.vendors.openai",
    "crank.vendors.anthropic",
    "crank.tools.bash",
    "crank.tools.grep",
    "crank.session.log",
    "crank.session.housekeeping",
    "crank.prompt.loader",
    "crank.prompt.watcher",
    "crank.agent.harness",
]
"""Not needed to answer ``initialize``; each is needed once a folder has its host."""
FULL_SERVER = ["pygls", "lsprotocol.types", "cattrs", "crank.lsp.server", "crank.lsp.frames"]
"""Not needed for the early answer; the full server, built right after it."""

SPY = r"""
import json, runpy, sys

class Spy:
    # The server's stdout: at each write that answers a request, the modules loaded
    # are recorded in a file (stderr is left to the server's log).
    def __init__(self, raw):
        self.raw = raw
    def write(self, data):
        if b'"result"' in data:
            with open(record, "a") as out:
                out.write(json.dumps(sorted(sys.modules)) + "\n")
        return self.raw.write(data)
    def flush(self):
        self.raw.flush()
    def __getattr__(self, name):
        return getattr(self.raw, name)

class Out:
    buffer = Spy(sys.stdout.buffer)

sys.stdout = Out()
record, entry = sys.argv[1:3]
sys.argv = [entry, *sys.argv[3:]]
runpy.run_module(entry, run_name="__main__", alter_sys=True)
"""


BOUND = 300.0
"""Seconds before the server counts as hung (a loaded machine; nothing is timed)."""


def frame(message: dict[str, object]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_frame(stream: IO[bytes]) -> dict[str, Any]:
    length = 0
    while (line := stream.readline()) not in (b"\r\n", b""):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    assert length, "the server closed its output"
    message: dict[str, Any] = json.loads(stream.read(length))
    return message


def answer_to(stream: IO[bytes], number: int) -> dict[str, Any]:
    while "id" not in (message := read_frame(stream)) or message["id"] != number:
        pass
    return message


def loaded_at_each_answer(tmp_path: Path, entry: list[str]) -> list[set[str]]:
    """Run the real server (``entry``: ``crank.lsp``, or ``crank.cli serve``) through
    ``initialize``, then ``initialized`` and a ``crank/state`` for its one folder; the
    modules loaded when each answer was written."""
    work = tmp_path / "work"
    work.mkdir()
    record = tmp_path / "modules.jsonl"
    initialize = {
        "capabilities": {},
        "workspaceFolders": [{"uri": work.as_uri(), "name": "work"}],
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", SPY, str(record), *entry],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=server_env(tmp_path),
    )
    assert proc.stdin is not None and proc.stdout is not None
    guard = threading.Timer(BOUND, proc.kill)  # a hang fails the test, never blocks it
    guard.start()
    try:
        proc.stdin.write(
            frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize})
        )
        proc.stdin.flush()
        assert "result" in answer_to(proc.stdout, 1)
        proc.stdin.write(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        proc.stdin.write(frame({"jsonrpc": "2.0", "id": 2, "method": "crank/state", "params": {}}))
        proc.stdin.flush()
        assert "result" in answer_to(proc.stdout, 2)
        proc.stdin.close()
        proc.wait()
    finally:
        guard.cancel()
        proc.kill()
    snapshots = [set(json.loads(x)) for x in record.read_text("utf-8").splitlines()]
    assert len(snapshots) == 2, "one record per answer"
    return snapshots


@pytest.mark.parametrize("entry", [["crank.lsp"], ["crank.cli", "serve"]], ids=["lsp", "cli"])
def test_initialize_is_answered_before_the_heavy_modules_are_imported(
    tmp_path: Path, entry: list[str]
) -> None:
    at_initialize, at_state = loaded_at_each_answer(tmp_path, entry)[:2]
    early = [name for name in HEAVY + FULL_SERVER if name in at_initialize]
    assert early == [], f"imported before the initialize answer: {early}"
    assert "crank.lsp.early" in at_initialize
    assert [name for name in FULL_SERVER if name not in at_state] == []
    later = [name for name in HEAVY if name.startswith("crank.") and name not in at_state]
    assert later == [], f"the host runs without {later}: the spy saw the wrong moment"
    # bashlex builds its parser tables at import (about 110 ms): only a rule check needs it
    assert "bashlex" not in at_state


def _declared(package: str) -> tuple[dict[str, str], str]:
    """From the package's ``__init__.py``: name -> module as imported under
    ``TYPE_CHECKING`` (what ``crank.lazy.exports`` reads), and the source."""
    from crank.lazy import declared

    source = (REPO / "server" / "crank" / package / "__init__.py").read_text("utf-8")
    return declared(source), source


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_a_lazy_package_exports_what_it_declares(package: str) -> None:
    lazy, source = _declared(package)
    # Issue 34.9: each export is written once (it was written three times: the
    # TYPE_CHECKING import, __all__, and the map given to exports).
    tree = ast.parse(source)
    literals = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in lazy
    ]
    assert literals == [], f"listed again as strings (an __all__ or a map): {literals}"
    imported = [
        alias.asname or alias.name
        for block in tree.body
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.level >= 1
        for alias in node.names
    ]
    assert sorted(imported) == sorted(lazy), "each export is imported once"
    # A name spelled like its module is shadowed by the module once anything imports
    # that module (the import system sets the attribute): crank.session.repair was.
    clashes = [name for name, module in lazy.items() if module == f".{name}"]
    assert clashes == [], f"import these from their module instead: {clashes}"
    module = importlib.import_module(f"crank.{package}")
    names = module.__all__
    assert set(lazy) <= set(names)
    for name in names:
        value = getattr(module, name)
        owner = lazy.get(name)
        if owner is not None:
            defined = importlib.import_module(owner, f"crank.{package}")
            assert value is getattr(defined, name)
    assert set(lazy) <= set(names) | set(dir(module))
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        module.nothing_here  # noqa: B018
