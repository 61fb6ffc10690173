"""Work-done progress and request cancellation, over stdio against the real server.

pytest-lsp's client answers ``window/workDoneProgress/create`` and records every
``$/progress`` value per token in ``client.progress_reports``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.support.model_server import ModelServer

from .helpers import WRITE_A, Crank, model_received, running_server
from .test_runs import kinds, options, project, session_lines, started


def progress_of(crank: Crank) -> dict[Any, list[Any]]:
    return {token: list(values) for token, values in crank.client.progress_reports.items()}


async def progress_settled(crank: Crank, count: int) -> None:
    """Wait until ``count`` progress tokens have ended (they go out from their own task,
    just after the run's ``agent_settled``)."""
    for _ in range(500):
        reports = progress_of(crank)
        ended = [v for v in reports.values() if v and isinstance(v[-1], types.WorkDoneProgressEnd)]
        if len(ended) >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"progress never ended: {progress_of(crank)}")


async def test_a_run_is_reported_as_work_done_progress(tmp_path: Path) -> None:
    script = {
        "replies": [
            {"toolCalls": [{"name": "ls", "arguments": {}}]},
            {"text": "listed"},
        ]
    }
    with ModelServer(script) as model:
        opts = options(model, tmp_path)
        async with running_server(tmp_path, [project(tmp_path)], opts, progress=True) as crank:
            await crank.settled(await started(crank, "list"))
            await progress_settled(crank, 1)
            (token, values), *others = progress_of(crank).items()
            assert others == []
            assert str(token).startswith("crank-")
            begin, *reports, end = values
            assert isinstance(begin, types.WorkDoneProgressBegin)
            assert begin.title == "Crank" and begin.cancellable is True
            assert [r.message for r in reports] == ["running ls"]
            assert isinstance(end, types.WorkDoneProgressEnd)

            await crank.settled(await started(crank, "again"))
            await progress_settled(crank, 2)
            assert len(progress_of(crank)) == 2  # one token per run


async def test_no_progress_without_the_capability(tmp_path: Path) -> None:
    with ModelServer({"replies": [{"text": "hi"}]}) as model:
        async with running_server(tmp_path, [project(tmp_path)], options(model, tmp_path)) as crank:
            await crank.settled(await started(crank, "hello"))
            assert progress_of(crank) == {}


async def test_cancelling_the_progress_aborts_the_run(tmp_path: Path) -> None:
    with ModelServer({"replies": [{"text": "never", "hangAfter": 0}, {"text": "ok"}]}) as model:
        opts = options(model, tmp_path)
        async with running_server(tmp_path, [project(tmp_path)], opts, progress=True) as crank:
            run_id = await started(crank, "hang please")
            await model_received(model, 1)
            for _ in range(500):
                if any(progress_of(crank).values()):
                    break
                await asyncio.sleep(0.01)
            (token,) = progress_of(crank)
            crank.client.window_work_done_progress_cancel(
                types.WorkDoneProgressCancelParams(token=token)
            )
            events = await crank.settled(run_id, within=10)
            assert kinds(events).count("agent_settled") == 1
            assert events[-2]["event"] == {"type": "agent_end", "stopReason": "aborted"}
            await progress_settled(crank, 1)
            state = await crank.request("crank/state", {})
            assert state["running"] is False
            messages = (await crank.request("crank/messages", {}))["messages"]
            assert [line["message"] for line in session_lines(state)[1:]] == messages
            again = await crank.request("crank/prompt", {"text": "and now?"})
            assert kinds(await crank.settled(again["runId"]))[-1] == "agent_settled"


async def test_a_cancelled_request_is_answered(tmp_path: Path) -> None:
    """A branch with a summary waits on the model; cancelling it gets -32800 (or its
    result), never silence, and the server goes on answering."""
    script = {"replies": [{"text": "first answer"}, {"text": "never", "hangAfter": 0}]}
    with ModelServer(script) as model:
        async with running_server(tmp_path, [project(tmp_path)], options(model, tmp_path)) as crank:
            await crank.settled(await started(crank, "one"))
            tree = await crank.request("crank/tree", {})
            user_entry = tree["entries"][0]["id"]
            protocol = crank.client.protocol
            future = asyncio.wrap_future(
                protocol.send_request(
                    "crank/branch", {"entryId": user_entry, "summarize": True}, msg_id="slow-1"
                )
            )
            await model_received(model, 2)
            protocol.notify("$/cancelRequest", types.CancelParams(id="slow-1"))
            with pytest.raises(JsonRpcException) as raised:
                await asyncio.wait_for(future, 10)  # the model hangs: no result can come
            assert raised.value.code == -32800
            state = await crank.request("crank/state", {})
            assert state["running"] is False
            assert await crank.request("crank/tree", {}) == tree
            lines = session_lines(state)
            assert len({line["id"] for line in lines}) == len(lines)


async def test_a_question_open_is_reported_as_waiting_for_approval(tmp_path: Path) -> None:
    """The status bar said "running write" while the run waited for the user."""
    script = {"replies": [WRITE_A, {"text": "written"}]}
    with ModelServer(script) as model:
        opts = options(model, tmp_path)
        async with running_server(tmp_path, [project(tmp_path)], opts, progress=True) as crank:
            await crank.settled(await started(crank, "write it"))
            await progress_settled(crank, 1)
            (_token, values), *_ = progress_of(crank).items()
            _begin, *reports, _end = values
            assert [r.message for r in reports] == [
                "running write",
                "waiting for approval: write",
                "running write",
            ]
