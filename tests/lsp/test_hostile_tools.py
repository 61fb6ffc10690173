"""Tools on hostile input never wedge the server (issue 26 item 3), over a real
``crank serve``: ``crank/state`` is answered while the tool runs, and an abort lands.

- ``(a+)+n`` over a 40-character line of an open buffer (grep's Python engine): with
  Python's ``re`` this took about 2^40 steps holding the GIL, and the server answered
  nothing; RE2 (``crank.tools.pattern``) answers at once.
- a FIFO where a .gitignore goes: ripgrep blocks on it until its no-I/O watchdog
  (5 s) kills it. Meanwhile ``crank/state`` is answered (the tool has not ended: an
  ordering assertion, no timer), then the abort ends the run, ripgrep and its sandbox
  (no process naming the pattern is left).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from tests.security.frontends import bad_workspace
from tests.support.model_server import ModelServer
from tests.support.processes import marker, survivors

from .helpers import running_server
from .test_runs import options, project, started, tool_ends


def grep_script(pattern: str) -> dict[str, Any]:
    call = {"id": "g", "name": "grep", "arguments": {"pattern": pattern}}
    return {"replies": [{"toolCalls": [call]}, {"text": "searched"}]}


async def test_a_catastrophic_pattern_in_an_open_buffer_leaves_the_server_answering(
    tmp_path: Path,
) -> None:
    folder = project(tmp_path)
    (folder / "slow.txt").write_text("a" * 40 + "\n")
    with ModelServer(grep_script("(a+)+n")) as model:
        async with running_server(tmp_path, [folder], options(model, tmp_path)) as crank:
            crank.open(folder / "slow.txt", "a" * 40 + "\n")
            run_id = await started(crank, "search")
            await crank.wait_for(lambda e: e["event"]["type"] == "tool_execution_start")
            assert isinstance(await crank.request("crank/state", {}), dict)
            (end,) = tool_ends(await crank.settled(run_id, within=60))
            assert "No matches" in str(end["result"]["content"])


async def test_state_is_answered_while_grep_is_stuck_and_the_abort_lands(
    tmp_path: Path,
) -> None:
    folder = project(tmp_path)
    needle = marker("needle")  # ripgrep's pattern, so its argv names it
    (folder / "a.py").write_text(f"{needle}\n")
    os.mkfifo(folder / ".gitignore")
    with ModelServer(grep_script(needle)) as model:
        async with running_server(tmp_path, [folder], options(model, tmp_path)) as crank:
            run_id = await started(crank, "search")
            await crank.wait_for(lambda e: e["event"]["type"] == "tool_execution_start")
            await asyncio.wait_for(crank.request("crank/state", {}), 60)  # a hang fails
            assert not tool_ends(crank.events)  # answered while grep was still running
            await asyncio.wait_for(crank.request("crank/abort", {}), 60)
            events = await crank.settled(run_id, within=60)
            (end,) = tool_ends(events)
            assert end["result"]["isError"] is True
            assert needle not in str(end["result"]["content"])  # it did not run to the end
            # the abort ended ripgrep and its sandbox, not just the process crank started
            assert survivors(needle, in_arguments=True) == []


ESCAPED = r"bad\xffname.txt"
"""``bad\xffname.txt`` as the tools show it to the model (``tools/names.py``)."""


def sent_results(model: ModelServer) -> str:
    """The tool results of the last request the model got, as one text."""
    messages = model.requests[-1]["body"]["messages"]
    return "\n".join(str(m["content"]) for m in messages if m.get("role") == "tool")


@pytest.mark.parametrize(
    ("tool", "arguments"), [("ls", {"path": "."}), ("find", {"pattern": "**/*"})]
)
async def test_a_name_that_is_not_utf8_settles_the_run_and_reaches_the_model_escaped(
    tmp_path: Path, tool: str, arguments: dict[str, Any]
) -> None:
    """ls and find over ``bad\\xffname.txt``: the run never ended (no
    ``tool_execution_end``, no ``agent_settled``) before the one rule for text."""
    folder = bad_workspace(project(tmp_path))
    call = {"id": "t", "name": tool, "arguments": arguments}
    script = {"replies": [{"toolCalls": [call]}, {"text": "listed"}]}
    with ModelServer(script) as model:
        async with running_server(tmp_path, [folder], options(model, tmp_path)) as crank:
            run_id = await started(crank, "list")
            (end,) = tool_ends(await crank.settled(run_id, within=60))
            assert end["result"]["isError"] is False, end
            assert ESCAPED in str(end["result"]["content"]), end
            assert isinstance(await crank.request("crank/state", {}), dict)
        assert ESCAPED in sent_results(model)
        if tool == "find":
            assert r"d\xfe\xfe/x\x80.py" in sent_results(model)
