"""Branching with a summary of the abandoned attempt, through a model call."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from crank.agent.messages import assistant_message
from crank.agent.model import AbortSignal, ModelRequest, StreamEvent
from crank.session import BRANCH_SUMMARY_PREFIX, SessionLog, SummaryFailed
from crank.session.branch_summary import MAX_INPUT_CHARS

from .conftest import ask, call, result, say


class RecordingModel:
    """A stand-in for a real Model (nothing real can answer offline): it replies with a
    fixed text, or fails, and records every request it was sent."""

    api = "fake"
    id = "fake-1"
    context_window = 100_000

    def __init__(self, reply: str, *, fail: bool = False) -> None:
        self.reply = reply
        self.fail = fail
        self.requests: list[ModelRequest] = []

    async def stream(
        self, request: ModelRequest, signal: AbortSignal
    ) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        stop = "error" if self.fail else "stop"
        message = assistant_message(
            [{"type": "text", "text": self.reply}],
            stop_reason=stop,
            error_message="HTTP 500" if self.fail else None,
        )
        yield {"type": "done", "message": message}


async def two_attempts(log: SessionLog, tool_output: str = "ok") -> str:
    fork = await log.append_message(ask("Make main.py faster."))
    await log.append_message(say("Shall I cache?"))
    await log.append_message(ask("Do it, then."))
    await log.append_message(call("write", {"path": "main.py", "content": "CACHE={}"}, "c1"))
    await log.append_message(result("c1", "write", tool_output))
    await log.append_message(call("edit", {"path": "util/cache.py", "old": "a"}, "c2"))
    await log.append_message(result("c2", "edit", "ok"))
    await log.append_message(say("Done: main.py keeps a CACHE."))
    return fork


async def test_summary_comes_from_one_toolless_call_about_the_abandoned_part(
    log: SessionLog,
) -> None:
    fork = await two_attempts(log)
    abandoned_tip = log.tip
    model = RecordingModel("Tried a global cache in main.py and util/cache.py.")
    tip = await log.branch_to(fork, summarize=model)

    (request,) = model.requests
    assert request.tools == [] and "abandoned" in request.system
    assert len(request.messages) == 1
    quoted = request.messages[0]["content"]
    assert isinstance(quoted, str)
    assert "Do it, then." in quoted and "Make main.py faster." not in quoted

    summary_entry = log.tree.by_id[tip]
    branch_entry = log.tree.by_id[summary_entry["parentId"]]
    assert branch_entry["type"] == "branch" and branch_entry["parentId"] == fork
    assert summary_entry["type"] == "branchSummary"
    assert summary_entry["fromId"] == abandoned_tip
    replayed = log.replay()
    assert replayed[0]["content"] == "Make main.py faster."
    assert replayed[1]["role"] == "user"
    assert str(replayed[1]["content"]).startswith(BRANCH_SUMMARY_PREFIX)


async def test_files_the_model_forgot_are_added_to_the_summary(log: SessionLog) -> None:
    fork = await two_attempts(log)
    tip = await log.branch_to(fork, summarize=RecordingModel("Tried caching."))
    summary = log.tree.by_id[tip]["summary"]
    assert summary.startswith("Tried caching.")
    assert "main.py" in summary and "util/cache.py" in summary


async def test_huge_tool_output_is_capped_in_the_request(log: SessionLog) -> None:
    fork = await two_attempts(log, tool_output="x" * 3_000_000)
    for n in range(200):
        await log.append_message(ask(f"more {n} " + "y" * 5_000))
    model = RecordingModel("summary")
    await log.branch_to(fork, summarize=model)
    quoted = str(model.requests[0].messages[0]["content"])
    assert len(quoted) < MAX_INPUT_CHARS + 5_000
    assert "more 199" in quoted and "earlier messages left out" in quoted


async def test_a_failed_summary_writes_nothing(log: SessionLog) -> None:
    fork = await two_attempts(log)
    before = log.path.read_bytes()
    with pytest.raises(SummaryFailed, match="HTTP 500"):
        await log.branch_to(fork, summarize=RecordingModel("", fail=True))
    assert log.path.read_bytes() == before


async def test_nothing_abandoned_means_no_model_call(log: SessionLog) -> None:
    await log.append_message(ask("only"))
    model = RecordingModel("unused")
    tip = await log.branch_to(log.tip or "", summarize=model)
    assert model.requests == [] and log.tree.by_id[tip]["type"] == "branch"
