"""Session management over the wire: tree, branch (with and without a summary),
sessions, newSession and openSession, and their refusals while a run is active."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from crank.session.store import workspace_key
from tests.session.test_deferred import line
from tests.session.test_unread_history import history_with
from tests.support.model_server import ModelServer

from .helpers import Crank, model_received, running_server
from .test_runs import options, project, session_lines, started


async def ask(crank: Crank, text: str) -> dict[str, Any]:
    answer: dict[str, Any] = await crank.request("crank/prompt", {"text": text})
    await crank.settled(answer["runId"])
    return answer


async def refused(crank: Crank, method: str, params: dict[str, Any]) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as raised:
        await crank.request(method, params)
    return raised.value


def user_texts(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "user"]


async def test_tree_and_branch_with_and_without_a_summary(tmp_path: Path) -> None:
    replies = [
        {"text": "A1"},
        {"text": "A2"},
        {"text": "A3"},
        {"text": "Tried question three; it answered A3."},
    ]
    with ModelServer({"replies": replies}) as model:
        async with running_server(tmp_path, [project(tmp_path)], options(model, tmp_path)) as crank:
            assert await crank.request("crank/tree", {}) == {"tip": None, "entries": []}
            await ask(crank, "one")
            await ask(crank, "two")
            tree = await crank.request("crank/tree", {})
            entries = tree["entries"]
            assert [(e["type"], e.get("role")) for e in entries] == [
                ("message", "user"),
                ("message", "assistant"),
                ("message", "user"),
                ("message", "assistant"),
            ]
            assert entries[0]["parentId"] is None
            assert [e["parentId"] for e in entries[1:]] == [e["id"] for e in entries[:-1]]
            assert tree["tip"] == entries[-1]["id"]
            assert entries[0]["preview"] == "one"

            state = await crank.request("crank/state", {})
            assert state["branched"] is False  # one line of entries: no tree to read for branches
            lines_before = len(session_lines(state))
            error = await refused(crank, "crank/branch", {"entryId": "no-such-entry"})
            assert error.code == -32602 and "no-such-entry" in str(error)
            error = await refused(
                crank, "crank/branch", {"entryId": entries[1]["id"], "summarize": "y"}
            )
            assert error.code == -32602 and "summarize" in str(error)
            assert len(session_lines(state)) == lines_before

            answer = await crank.request("crank/branch", {"entryId": entries[1]["id"]})
            after = await crank.request("crank/tree", {})
            assert after["tip"] == answer["tip"] == after["entries"][-1]["id"]
            assert after["entries"][-1]["type"] == "branch"
            assert after["entries"][-1]["parentId"] == entries[1]["id"]
            assert (await crank.request("crank/state", {}))["branched"] is True
            messages = (await crank.request("crank/messages", {}))["messages"]
            assert user_texts(messages) == ["one"]

            await ask(crank, "three")
            assert user_texts((await crank.request("crank/messages", {}))["messages"]) == [
                "one",
                "three",
            ]
            summarized = await crank.request(
                "crank/branch", {"entryId": entries[1]["id"], "summarize": True}
            )
            lines = session_lines(state)
            assert lines[-1]["id"] == summarized["tip"]
            assert lines[-1]["type"] == "branchSummary"
            assert "A3" in lines[-1]["summary"]
            assert "three" in str(model.requests[-1]["body"]["messages"])
            messages = (await crank.request("crank/messages", {}))["messages"]
            assert user_texts(messages)[0] == "one"
            assert "A3" in str(messages[-1]["content"])  # the summary travels on


async def test_sessions_new_and_open(tmp_path: Path) -> None:
    with ModelServer({"replies": [{"text": "first"}, {"text": "second"}]}) as model:
        async with running_server(tmp_path, [project(tmp_path)], options(model, tmp_path)) as crank:
            assert (await crank.request("crank/sessions", {})) == {"sessions": []}
            first = await ask(crank, "remember the first")
            listed = (await crank.request("crank/sessions", {}))["sessions"]
            assert [s["sessionId"] for s in listed] == [first["sessionId"]]
            assert listed[0]["messageCount"] == 2
            assert listed[0]["firstMessage"] == "remember the first"

            new = await crank.request("crank/newSession", {})
            assert new["sessionId"] != first["sessionId"]
            changed = crank.events[-1]
            assert changed["event"] == {"type": "session_changed", "sessionId": new["sessionId"]}
            assert (await crank.request("crank/messages", {})) == {"messages": []}
            assert (await crank.request("crank/state", {}))["sessionId"] == new["sessionId"]
            assert len((await crank.request("crank/sessions", {}))["sessions"]) == 1

            second = await ask(crank, "the second")
            assert second["sessionId"] == new["sessionId"]
            listed = (await crank.request("crank/sessions", {}))["sessions"]
            assert [s["sessionId"] for s in listed] == [new["sessionId"], first["sessionId"]]

            opened = await crank.request("crank/openSession", {"sessionId": first["sessionId"]})
            assert opened == {"sessionId": first["sessionId"]}
            assert crank.events[-1]["event"]["type"] == "session_changed"
            messages = (await crank.request("crank/messages", {}))["messages"]
            assert user_texts(messages) == ["remember the first"]
            error = await refused(crank, "crank/state", {"sessionId": new["sessionId"]})
            assert error.code == 1002


async def test_session_changes_are_refused_while_running(tmp_path: Path) -> None:
    with ModelServer({"replies": [{"text": "ok"}, {"text": "x", "hangAfter": 0}]}) as model:
        async with running_server(tmp_path, [project(tmp_path)], options(model, tmp_path)) as crank:
            first = await ask(crank, "one")
            entry = (await crank.request("crank/tree", {}))["entries"][0]["id"]
            await crank.request("crank/newSession", {})
            await started(crank, "hang")
            await model_received(model, 2)
            for method, params in [
                ("crank/newSession", {}),
                ("crank/openSession", {"sessionId": first["sessionId"]}),
                ("crank/compact", {}),
                ("crank/branch", {"entryId": entry}),
            ]:
                error = await refused(crank, method, params)
                assert error.code == 1006, (method, error)
            state = await crank.request("crank/state", {})
            assert state["running"] is True and state["sessionId"] != first["sessionId"]
            assert (await crank.request("crank/abort", {})) == {"stopReason": "aborted"}
            await crank.request("crank/openSession", {"sessionId": first["sessionId"]})
            error = await refused(crank, "crank/branch", {"entryId": "nope"})
            assert error.code == -32602
            assert (await crank.request("crank/branch", {"entryId": entry}))["tip"]


async def test_a_history_found_broken_at_the_first_prompt_ends_the_run_readably(
    tmp_path: Path,
) -> None:
    """A compacted session opens without reading its history (docs/session.md); a fault
    there is found when the first prompt's message is appended. The run still ends for
    the client, with the fault named, and nothing is written past it."""
    folder = project(tmp_path)
    directory = tmp_path / "sessions" / workspace_key(folder)
    directory.mkdir(parents=True)
    path = history_with(directory / "s.jsonl", line("m1", None, b'{"role":"robot"}'))
    before = path.read_bytes()
    with ModelServer({"replies": [{"text": "never asked"}]}) as model:
        async with running_server(tmp_path, [folder], options(model, tmp_path)) as crank:
            assert await crank.request("crank/openSession", {"sessionId": "s"}) == {
                "sessionId": "s"
            }
            shown = (await crank.request("crank/messages", {}))["messages"]
            assert shown[-1]["content"] == [{"type": "text", "text": "after"}]
            error = await refused(crank, "crank/tree", {})
            assert error.code == 1005 and "line 2" in error.message
            answer = await crank.request("crank/prompt", {"text": "go on"})
            events = [e["event"] for e in await crank.settled(answer["runId"])]
            assert model.requests == []
    ends = [e for e in events if e["type"] == "message_end"]
    assert ends[0]["message"]["role"] == "user" and "entryId" not in ends[0]  # not written
    stopped = ends[-1]["message"]
    assert stopped["role"] == "assistant" and "line 2" in stopped["errorMessage"]
    assert stopped["errorMessage"].startswith("Run stopped: saving the session failed: ")
    assert [e["type"] for e in events][-2:] == ["agent_end", "agent_settled"]
    assert events[-2]["stopReason"] == "error"
    assert path.read_bytes() == before


async def test_the_transcript_comes_in_pages_that_never_split_a_call_from_its_results(
    tmp_path: Path,
) -> None:
    listing = [
        {"name": "ls", "arguments": {"path": "."}},
        {"name": "ls", "arguments": {"path": "."}},
    ]
    replies = [{"toolCalls": listing}, {"text": "listed twice"}, {"text": "hello again"}]
    with ModelServer({"replies": replies}) as model:
        async with running_server(tmp_path, [project(tmp_path)], options(model, tmp_path)) as crank:
            await ask(crank, "list it")
            await ask(crank, "hi")
            whole = (await crank.request("crank/messages", {}))["messages"]
            roles = [m["role"] for m in whole]
            assert roles == [
                "user",
                "assistant",
                "toolResult",
                "toolResult",
                "assistant",
                "user",
                "assistant",
            ]
            assert set(await crank.request("crank/messages", {})) == {"messages"}  # as before

            newest = await crank.request("crank/messages", {"limit": 2})
            assert (newest["start"], newest["total"], newest["messages"]) == (5, 7, whole[5:])
            # a page that would begin with a result begins at its call
            split = await crank.request("crank/messages", {"limit": 2, "before": 5})
            assert (split["start"], split["messages"]) == (1, whole[1:5])
            pages, before = [], None
            while before != 0:
                page = await crank.request(
                    "crank/messages", {"limit": 3, **({} if before is None else {"before": before})}
                )
                assert page["total"] == 7 and page["messages"][0]["role"] != "toolResult"
                pages.insert(0, page["messages"])
                before = page["start"]
            assert [m for page in pages for m in page] == whole
            past = await crank.request("crank/messages", {"before": 99})
            assert (past["start"], past["messages"]) == (0, whole)

            error = await refused(crank, "crank/messages", {"limit": 0})
            assert error.code == -32602 and "limit" in str(error) and "at least 1" in str(error)
            error = await refused(crank, "crank/messages", {"before": -1})
            assert error.code == -32602 and "before" in str(error)
            error = await refused(crank, "crank/messages", {"limit": "10"})
            assert error.code == -32602 and "limit" in str(error)
