"""The editor's diagnostics in the loop (issue 30), against the real server over stdio.

The test client plays an editor whose language server reports a type error once the
agent's edit is in: it declares ``experimental.crank.diagnostics``, answers
``crank/diagnostics`` with LSP diagnostics, and the edit's tool result carries them.
A client that never answers costs the edit no more than the settle time and a note;
a client that did not declare the capability is never asked; the setting turns it off.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.support.model_server import ModelServer

from .helpers import running_server
from .test_one_truth import FIX, options, run, script, setup

TYPE_ERROR = {
    "range": {"start": {"line": 1, "character": 11}, "end": {"line": 1, "character": 16}},
    "severity": 1,
    "message": 'Operator "+" not supported for types "int" and "str"',
    "source": "Pyright",
    "code": "reportOperatorIssue",
}
HINT = {"range": TYPE_ERROR["range"], "severity": 4, "message": "unused"}


def settings(model: ModelServer, tmp_path: Path, **diagnostics: Any) -> dict[str, Any]:
    return {**options(model, tmp_path), "diagnostics": {"settleMs": 50, **diagnostics}}


async def test_an_edit_gets_the_editors_errors_in_its_result(tmp_path: Path) -> None:
    folder, calc = setup(tmp_path)
    with ModelServer(script({"tool": "edit", **FIX})) as model:
        async with running_server(
            tmp_path, [folder], settings(model, tmp_path), diagnostics=True
        ) as crank:
            crank.answer_diagnostics = lambda asked: {
                "items": [{"uri": uri, "diagnostics": [TYPE_ERROR, HINT]} for uri in asked["uris"]]
            }
            result = (await run(crank))["c1"]
            assert not result["isError"], result
            assert crank.diagnostics_asked == [{"uris": [calc.as_uri()]}]
            assert (
                "[The editor now reports 1 error(s) and 0 warning(s) in calc.py:"
                in (result["content"])
            )
            assert (
                '- 2:12 error: Operator "+" not supported for types "int" and "str" '
                "[Pyright reportOperatorIssue]]" in result["content"]
            )
            assert "unused" not in result["content"]  # hints are not errors or warnings
            # What the model was sent is the same result.
            sent = str(model.requests[-1]["body"]["messages"])
            assert "reportOperatorIssue" in sent


async def test_a_client_that_never_answers_costs_a_note_not_the_edit(tmp_path: Path) -> None:
    folder, calc = setup(tmp_path)
    never = asyncio.Event()
    with ModelServer(script({"tool": "edit", **FIX})) as model:
        async with running_server(
            tmp_path, [folder], settings(model, tmp_path), diagnostics=True
        ) as crank:
            crank.answer_diagnostics = lambda asked: never.wait()
            result = (await run(crank))["c1"]
            never.set()
            assert not result["isError"], result
            assert (
                "[The editor did not report its diagnostics for calc.py within 1 s"
                in (result["content"])
            )
            assert "return a + b" in calc.read_text()  # the edit itself went through


async def test_not_asked_without_the_capability_or_with_the_setting_off(tmp_path: Path) -> None:
    folder, _calc = setup(tmp_path)
    with ModelServer(script({"tool": "edit", **FIX})) as model:
        async with running_server(tmp_path, [folder], settings(model, tmp_path)) as crank:
            result = (await run(crank))["c1"]
            assert crank.diagnostics_asked == []
            assert "[The editor" not in result["content"]
    folder2 = tmp_path / "second"
    folder2.mkdir()
    (folder2 / "calc.py").write_text((folder / "calc.py").read_text().replace("a + b", "a - b", 1))
    with ModelServer(script({"tool": "edit", **FIX})) as model:
        async with running_server(
            tmp_path, [folder2], settings(model, tmp_path, enabled=False), diagnostics=True
        ) as crank:
            result = (await run(crank))["c1"]
            assert not result["isError"], result
            assert crank.diagnostics_asked == []
            assert "[The editor" not in result["content"]
