"""Compaction and context usage through the server: usage_update after every reply,
crank/compact by hand, automatic compaction in a small window, bad context settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.model_server import ModelServer

from .helpers import provider_for, running_server
from .test_runs import kinds, project, session_lines


def small_window(model: ModelServer, tmp_path: Path, window: int, **context: Any) -> dict[str, Any]:
    provider = {**provider_for(model.url), "contextWindow": window}
    return {"provider": provider, "sessionDir": str(tmp_path / "sessions"), "context": context}


async def test_manual_compaction_and_usage(tmp_path: Path) -> None:
    long_answer = "The module parses the config at src/config.py and caches it. " * 40
    replies = [{"text": long_answer}, {"text": long_answer}, {"text": long_answer}]
    replies.append({"text": "Goal: explain src/config.py. Progress: explained caching."})
    async with ModelServer({"replies": replies, "estimateUsage": True}) as model:
        options = small_window(model, tmp_path, 200_000, keepRecentTokens=300)
        async with running_server(tmp_path, [project(tmp_path)], options) as crank:
            for question in ("what does config do?", "and the cache?", "and errors?"):
                run = (await crank.request("crank/prompt", {"text": question}))["runId"]
                events = await crank.settled(run)
                names = kinds(events)
                assert names[names.index("usage_update") - 1] == "message_end"
            usage = [e["event"] for e in crank.events if e["event"]["type"] == "usage_update"][-1]
            assert usage["contextWindow"] == 200_000 and usage["contextTokens"] > 0
            before = len(crank.events)
            result = await crank.request("crank/compact", {"instructions": "keep file paths"})
            assert result["compacted"] is True, result
            assert result["tokensAfter"] < result["tokensBefore"]
            seen = [e["event"] for e in crank.events[before:]]
            assert seen[0] == {"type": "compaction_start", "reason": "manual"}
            assert any(e["type"] == "compaction_end" and e["compacted"] for e in seen)
            messages = (await crank.request("crank/messages", {}))["messages"]
            assert messages[0]["role"] == "user"
            assert messages[0]["content"].startswith("Previous conversation summary:")
            assert "src/config.py" in messages[0]["content"]
            summary_request = model.requests[-1]
            assert "keep file paths" in str(summary_request)


async def test_a_small_window_compacts_on_its_own(tmp_path: Path) -> None:
    filler = "word " * 600
    replies: list[dict[str, Any]] = []
    for n in range(6):
        replies.append({"text": f"Answer {n}: {filler}"})
    replies.insert(3, {"text": "Goal: answer the questions. Progress: three answered."})
    replies.extend({"text": "Goal: still answering."} for _ in range(4))
    async with ModelServer({"replies": replies, "estimateUsage": True}) as model:
        options = small_window(model, tmp_path, 2_500)
        async with running_server(tmp_path, [project(tmp_path)], options) as crank:
            for n in range(5):
                run = (await crank.request("crank/prompt", {"text": f"question {n}"}))["runId"]
                await crank.settled(run)
            names = [e["event"]["type"] for e in crank.events]
            assert "compaction_start" in names
            ends = [e["event"] for e in crank.events if e["event"]["type"] == "compaction_end"]
            assert any(end["compacted"] for end in ends)


async def test_a_bad_context_setting_is_reported_by_name(tmp_path: Path) -> None:
    async with ModelServer({"replies": []}) as model:
        options = small_window(model, tmp_path, 10_000, policy="aggressive")
        async with running_server(tmp_path, [project(tmp_path)], options) as crank:
            await crank.request("crank/state", {})
            logged = [m.message for m in crank.client.log_messages]
    assert any("context.policy" in line for line in logged), logged


async def test_a_compacted_session_reopens_as_it_was_and_goes_on(tmp_path: Path) -> None:
    """Reopened, a compacted session leaves the history its compaction summarised
    unread (``SessionTree.read``): the transcript, the context meter and the totals
    are what they were, the tree still lists every entry, and the next run appends."""
    long_answer = "The module parses the config at src/config.py and caches it. " * 40
    replies = [{"text": long_answer} for _ in range(3)]
    replies.append({"text": "Goal: explain src/config.py. Progress: explained caching."})
    replies.append({"text": "It raises ConfigError."})
    async with ModelServer({"replies": replies, "estimateUsage": True}) as model:
        options = small_window(model, tmp_path, 200_000, keepRecentTokens=300)
        async with running_server(tmp_path, [project(tmp_path)], options) as crank:
            for question in ("what does config do?", "and the cache?", "and errors?"):
                await crank.settled(
                    (await crank.request("crank/prompt", {"text": question}))["runId"]
                )
            assert (await crank.request("crank/compact", {}))["compacted"] is True
            before = await crank.request("crank/state", {})
            shown = (await crank.request("crank/messages", {}))["messages"]
            entries = [e["id"] for e in (await crank.request("crank/tree", {}))["entries"]]
            await crank.request("crank/newSession", {})
            await crank.request("crank/openSession", {"sessionId": before["sessionId"]})
            after = await crank.request("crank/state", {})
            # the totals; the meter's estimate is taken again (the calibration the run
            # learnt is not kept in the file)
            totals = ("input", "output", "cacheRead", "cacheWrite", "cost")
            assert [after["usage"][k] for k in totals] == [before["usage"][k] for k in totals]
            assert after["usage"]["output"] > 0 and after["usage"]["contextTokens"] > 0
            assert (await crank.request("crank/messages", {}))["messages"] == shown
            tree = (await crank.request("crank/tree", {}))["entries"]
            assert [e["id"] for e in tree] == entries
            run = (await crank.request("crank/prompt", {"text": "what does it raise?"}))["runId"]
            await crank.settled(run)
            lines = session_lines(after)
    ids = [line["id"] for line in lines[1:]]
    assert len(set(ids)) == len(ids) == len(entries) + 2  # the question and its answer
    compaction = next(line for line in lines if line["type"] == "compaction")
    assert compaction["usageBefore"]["output"] > 0
