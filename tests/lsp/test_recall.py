"""The course's case for ``recall``, through the real server: a test run failed with a
specific error, the conversation was compacted (the summary does not keep the error
word for word), and asked for that exact error the agent gets it back with one call,
from the session log, and the request that follows stays under the window."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.model_server import ModelServer

from .helpers import running_server
from .test_context import small_window
from .test_runs import project

ERROR = "E4711: frobnicate() got an unexpected keyword argument 'widget' (tests/test_io.py:88)"


def tool_names(request: dict[str, object]) -> list[str]:
    body = request["body"]
    assert isinstance(body, dict)
    return [tool["function"]["name"] for tool in body.get("tools", [])]


async def test_the_exact_error_comes_back_after_a_compaction(tmp_path: Path) -> None:
    folder = project(tmp_path)
    (folder / "pytest.log").write_text(f"collected 12 items\n\n{'.' * 11}F\n{ERROR}\n1 failed\n")
    filler = "The failing test exercises the IO layer of the widget module. " * 30
    replies = [
        {"toolCalls": [{"name": "read", "arguments": {"path": "pytest.log"}}]},
        {"text": f"One test failed. {filler}"},
        {"text": f"Noted. {filler}"},
        {"text": "Goal: fix the failing IO test. Progress: one test fails in tests/test_io.py."},
        {"toolCalls": [{"name": "recall", "arguments": {"query": "E4711"}}]},
        {"text": "That was the error."},
    ]
    async with ModelServer({"replies": replies, "estimateUsage": True}) as model:
        options = small_window(model, tmp_path, 8_000, keepRecentTokens=200)
        async with running_server(tmp_path, [folder], options) as crank:
            for text in ("run the tests and tell me what failed", "thanks, go on"):
                started = await crank.request("crank/prompt", {"text": text})
                await crank.settled(started["runId"])
            assert "recall" not in tool_names(model.requests[-1]), "nothing compacted yet"
            compacted = await crank.request("crank/compact", {})
            assert compacted["compacted"] is True, compacted
            sent_after = len(model.requests)
            started = await crank.request("crank/prompt", {"text": "what was the exact error?"})
            events = await crank.settled(started["runId"])
        ends = [e["event"] for e in events if e["event"]["type"] == "tool_execution_end"]
        assert len(ends) == 1, "one call"
        assert ERROR in ends[0]["result"]["content"]
        assert ends[0]["result"]["isError"] is False
        first_after, last = model.requests[sent_after], model.requests[-1]
        assert "recall" in tool_names(first_after), "offered once something was compacted"
        summary = json.dumps(first_after["body"]["messages"])
        assert ERROR not in summary, "the summary did not keep it: recall brought it back"
        assert ERROR in json.dumps(last["body"]["messages"])
        assert len(json.dumps(last["body"])) // 4 < 8_000, "under the window"
