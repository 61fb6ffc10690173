"""A "Fix This File" run that leaves its file as it was says so, and why, when it ends
(issue 29: a small local model calls ``read`` with a path it made up, or only talks,
and the user watching the file was told nothing). Over real ``crank serve`` with the
loopback model server; the sentence itself is unit-tested in
``tests/workspace/test_fix_outcome.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsprotocol import types

from tests.support.model_server import ModelServer

from .helpers import Crank, running_server
from .test_runs import options, project, untyped_request

BUG = "def add(a, b):\n    return a - b\n"


def fix_notices(crank: Crank) -> list[str]:
    return [
        e["event"]["message"]
        for e in crank.events
        if e["event"]["type"] == "notice" and e["event"]["kind"] == "fix_not_applied"
    ]


async def fix(crank: Crank, target: Path) -> dict[str, Any]:
    diagnostic = {
        "range": {"start": {"line": 1, "character": 11}, "end": {"line": 1, "character": 16}},
        "message": "add must add",
        "severity": 1,
    }
    command = types.ExecuteCommandParams(
        command="crank.fixFile", arguments=[{"uri": target.as_uri(), "diagnostics": [diagnostic]}]
    )
    answer: dict[str, Any] = await untyped_request(crank, types.WORKSPACE_EXECUTE_COMMAND, command)
    await crank.settled(answer["runId"])
    # The notice goes out once the run has settled: a request answered after it is the
    # barrier that proves it was sent, or never will be.
    await crank.request("crank/state", {})
    return answer


async def run_fix(tmp_path: Path, script: dict[str, Any], **extra: Any) -> tuple[list[str], str]:
    folder = project(tmp_path)
    target = folder / "calc.py"
    target.write_text(BUG)
    with ModelServer(script) as model:
        async with running_server(tmp_path, [folder], options(model, tmp_path, **extra)) as crank:
            await fix(crank, target)
            return fix_notices(crank), target.read_text()


async def test_a_reply_in_prose_is_told_as_no_change(tmp_path: Path) -> None:
    script = {"replies": [{"text": "You should change the minus to a plus."}]}
    told, text = await run_fix(tmp_path, script)
    assert text == BUG
    assert told == [
        "Fix This File left calc.py unchanged: the model answered without calling a tool, "
        'so nothing was edited (it said: "You should change the minus to a plus.").'
    ]


async def test_a_read_of_a_made_up_path_is_named(tmp_path: Path) -> None:
    """What SmolLM2 does on llama-cpp-python: it reads a file that is not there (and
    then another, turn after turn, minutes each on one core): the user hears at the
    first reply's end, while the run goes on, and again when it ends."""
    read = {"name": "read", "arguments": {"path": "src/calculator.py"}}
    script = {"replies": [{"toolCalls": [read]}, {"text": "I could not find it."}]}
    told, text = await run_fix(tmp_path, script)
    assert text == BUG
    soon, end = told
    assert soon.startswith("Fix This File has not changed calc.py yet: 1 of its 1 tool calls")
    assert end.startswith("Fix This File left calc.py unchanged: 1 of its 1 tool calls failed")
    assert "src/calculator.py" in soon and "src/calculator.py" in end


async def test_a_fix_that_lands_says_nothing_more(tmp_path: Path) -> None:
    edit = {"path": "calc.py", "oldText": "a - b", "newText": "a + b"}
    script = {"replies": [{"toolCalls": [{"name": "edit", "arguments": edit}]}, {"text": "done"}]}
    told, text = await run_fix(tmp_path, script, permissionMode="autoEdit")
    assert text == BUG.replace("a - b", "a + b")
    assert told == []


async def test_a_fix_that_changes_another_file_says_which(tmp_path: Path) -> None:
    write = {"path": "notes.txt", "content": "add should add\n"}
    script = {"replies": [{"toolCalls": [{"name": "write", "arguments": write}]}, {"text": "ok"}]}
    told, text = await run_fix(tmp_path, script, permissionMode="autoEdit")
    assert text == BUG
    assert told == ["Fix This File left calc.py unchanged: the model changed notes.txt instead."]
