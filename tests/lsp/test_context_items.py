"""``crank/prompt`` ``context`` items over the real server and the loopback model: a
file, a range of its lines, and ``@problems`` (the editor's diagnostics for a file),
as the model receives them; the problems bounded; a malformed item refused by path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.support.model_server import ModelServer

from .helpers import running_server
from .test_runs import options, project


def diagnostic(line: int, message: str, severity: int = 1) -> dict[str, Any]:
    at = {"line": line, "character": 0}
    return {
        "range": {"start": at, "end": at},
        "severity": severity,
        "message": message,
        "source": "pyright",
    }


def last_user_text(model: ModelServer) -> str:
    body = model.requests[-1]["body"]
    content = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    return content if isinstance(content, str) else json.dumps(content)


async def test_files_ranges_and_problems_reach_the_model_as_tagged_context(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    calc = (root / "calc.py").as_uri()
    flood = [diagnostic(n, f"problem {n}") for n in range(60)]
    with ModelServer({"replies": [{"text": "seen"}, {"text": "seen"}]}) as model:
        async with running_server(tmp_path, [root], options(model, tmp_path)) as crank:
            problems = [
                diagnostic(1, 'Operator "-" is the wrong one\n   here ' + "x" * 2000),
                diagnostic(0, "unused import", severity=2),
            ]
            context = [
                {
                    "uri": calc,
                    "range": {
                        "start": {"line": 0, "character": 0},
                        "end": {"line": 0, "character": 0},
                    },
                },
                {"uri": calc, "diagnostics": problems},
            ]
            answer = await crank.request("crank/prompt", {"text": "fix these", "context": context})
            await crank.settled(answer["runId"])
            sent = last_user_text(model)
            assert '<context path="calc.py" lines="1-1">\ndef add(a, b):\n</context>' in sent
            start = sent.index('<problems path="calc.py">')
            block = sent[start : sent.index("</problems>", start)]
            lines = block.splitlines()[1:]
            assert lines[0].startswith('line 2: error: Operator "-" is the wrong one here xxx')
            assert lines[0].endswith("... (pyright)") and len(lines[0]) < 600
            assert lines[1] == "line 1: warning: unused import (pyright)"

            answer = await crank.request(
                "crank/prompt",
                {"text": "and these", "context": [{"uri": calc, "diagnostics": flood}]},
            )
            await crank.settled(answer["runId"])
            block = last_user_text(model)
            assert "line 50: error: problem 49 (pyright)" in block
            assert "problem 50 " not in block and "[10 more not shown]" in block

            with pytest.raises(JsonRpcException) as refused:
                bad = [{"uri": calc, "diagnostics": [{"message": "no range"}]}]
                await crank.request("crank/prompt", {"text": "x", "context": bad})
            assert "context[0].diagnostics[0].range: is required" in refused.value.message
