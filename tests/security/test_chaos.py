"""Chaos: a scripted model asks for every escape we can name, in ``crank run`` and in
``crank serve`` (default settings: permission mode ``ask``, sandbox
``workspace-write``), against the real commands and a real loopback model server.

Afterwards: no sentinel (provider keys, the config file's key, SSH/cloud/GPG/netrc/gh
secrets) in any tool result, event, stdout/stderr, log, session file, saved output or
model request body; nothing outside the workspace changed; no process left running;
every call answered; no hang (every wait has a bound that fails the test); and the
peak resident memory of ``crank run`` and of the ``crank serve`` process under 200 MB
while the tools handle 2 GB sparse, binary and one-line files (``hostile_files.py``).
The cases and checks live in ``world.py`` so other hostile inputs can be added there.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from crank.tools.search import RG_MEMORY
from tests.lsp.helpers import Crank, folder, running_server
from tests.support.model_server import ModelServer
from tests.support.processes import survivors

from .hostile_files import PEAK_BOUND_KB, run_measured, server_peak_kb
from .world import SEED, World, chaos_calls, leaks, leaks_in_files, make_world, script

REPO = Path(__file__).resolve().parents[2]
QUIET_SECONDS = 120
"""How long a run may go without a word (a line of ``crank run --json``, an event from
``crank serve``) before the test calls it a hang. A bound on the silence, not on the
whole run: the run's cases are many and each is short (the longest, at load 19 on two
cores, about a second), so a loaded machine stretches the run, never a step by much;
a hang is a step that never ends. The whole run once had 120 s, and next to CPU hogs
(load 17-19) it was killed at 120 s every time, still in one read of a 2 GB file."""

pytestmark = pytest.mark.requires("sandbox")  # the chaos suite: failed without it in CI


def check_after(world: World, before: Any, texts: dict[str, str], model: ModelServer) -> None:
    """Everything the two frontends share once a chaos run is over."""
    for where, text in texts.items():
        assert leaks(world, text) == [], f"a secret leaked into {where} (seed {SEED})"
    for request in model.requests:
        assert leaks(world, json.dumps(request["body"])) == [], "a secret reached the model"
    keys = {request["headers"].get("x-api-key") for request in model.requests}
    assert keys == {world.sentinels["CONFIG_KEY"]}, "the configured key was not the one used"
    data = [world.home / "data", world.home / "cache", world.root / "tmp", world.workspace]
    assert leaks_in_files(world, *data) == {}, "a secret was written to a file"
    assert world.unchanged() == before, "something outside the workspace changed"
    assert not world.tmp_probe.exists(), "a command wrote to the real /tmp"
    assert survivors(world.left) == [], "a command's process outlived its run"


def results_of(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == "tool_execution_end"]


def assert_every_call_answered(events: list[dict[str, Any]], batches: list[list[Any]]) -> None:
    results = results_of(events)
    assert len(results) == sum(len(batch) for batch in batches)
    for result in results:
        assert "timed out" not in result["result"]["content"], result


async def settled_while_heard(crank: Crank, run_id: str) -> list[dict[str, Any]]:
    """The run's events once it has settled; fails when the server sends nothing for
    QUIET_SECONDS (a hang), however long the whole run takes on a loaded machine."""

    def over() -> bool:
        return any(
            e.get("runId") == run_id and e["event"]["type"] == "agent_settled" for e in crank.events
        )

    def news_since(seen: int) -> Callable[[], bool]:
        return lambda: over() or len(crank.events) > seen

    while not over():
        await crank.until(news_since(len(crank.events)), within=QUIET_SECONDS)
    return [e for e in crank.events if e.get("runId") == run_id]


def test_crank_run_lets_nothing_out(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    batches = chaos_calls(world)
    with ModelServer(script(batches)) as model:
        env = world.env(dict(os.environ))
        world.key_for(model.url)
        before = world.unchanged()
        env.update(PYTHONPATH=str(REPO / "server"), ANTHROPIC_BASE_URL=model.url)
        done, peak_kb = run_measured(
            [sys.executable, "-m", "crank.cli", "run", "--json", "--max-turns", "200", "chaos"],
            cwd=world.workspace,
            env=env,
            quiet=QUIET_SECONDS,
        )
        assert done.returncode == 0, done.stderr
        # wait4 reports the largest of crank run and every process it waited for, so
        # ripgrep counts here: it runs under its own allowance (RG_MEMORY), which is
        # bounded but larger than the server's 200 MB. The server process's own peak is
        # held to 200 MB below, in the crank serve test, which measures it alone.
        tree_bound_kb = max(PEAK_BOUND_KB, (RG_MEMORY >> 10) + 64 * 1024)
        print(f"PEAK {peak_kb} kB of {tree_bound_kb}")
        assert peak_kb < tree_bound_kb, f"crank run (or a command) peaked at {peak_kb} kB"
        events = [json.loads(line)["event"] for line in done.stdout.splitlines()]
        assert_every_call_answered(events, batches)
        check_after(world, before, {"stdout": done.stdout, "stderr": done.stderr}, model)
    assert not (world.root / "escaped.txt").exists()


async def test_crank_serve_lets_nothing_out(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    batches = chaos_calls(world, seed=SEED + 1)
    log_file = world.root / "tmp" / "server.log"
    with ModelServer(script(batches)) as model:
        env = world.env(dict(os.environ))
        env["PYTHONPATH"] = str(REPO / "server")
        world.key_for(model.url)
        before = world.unchanged()
        options = {"provider": {"api": "anthropic", "baseUrl": model.url}}
        args = ("--log-file", str(log_file), "--log-level", "DEBUG")
        async with running_server(
            world.root, [world.workspace], options, env=env, server_args=args
        ) as crank:
            # The user says yes to every command and edit, and no to leaving the folder.
            crank.answer_permission = lambda asked: {
                "decision": "reject" if asked["toolName"] == "outside" else "allow"
            }
            uri = folder(world.workspace).uri
            state = await crank.request("crank/state", {"workspace": uri})
            assert state["sandbox"]["confined"] is True
            started = await crank.request("crank/prompt", {"workspace": uri, "text": "chaos"})
            events = await settled_while_heard(crank, started["runId"])
            peak_kb = server_peak_kb()
        assert peak_kb < PEAK_BOUND_KB, f"crank serve peaked at {peak_kb} kB"
        assert_every_call_answered([e["event"] for e in events], batches)
        wire = json.dumps(crank.events) + json.dumps(crank.permission_requests)
        texts = {"events": wire, "log": log_file.read_text("utf-8", errors="replace")}
        check_after(world, before, texts, model)
