"""The Housekeeper's public API as the server uses it."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import pytest

from crank.agent.scripted import Reply
from crank.session import SessionBusy, SessionLog
from crank.session.housekeeping import ContextSettings, Housekeeper

from ..agent.helpers import gated_tool
from .context_helpers import GOAL, rig, write_files

USAGE_KEYS = {
    "contextTokens",
    "contextWindow",
    "input",
    "output",
    "cacheRead",
    "cacheWrite",
    "cost",
}


async def test_usage_updates_follow_every_reply_and_calibrate_the_estimate(tmp_path: Path) -> None:
    r = rig(tmp_path, window=100_000)
    names = write_files(tmp_path / "project", 3)
    for name in names:
        await r.harness.prompt(f"Read {name}.").wait()
    updates = [e for e in r.events if e["type"] == "usage_update"]
    replies = [
        e for e in r.events if e["type"] == "message_end" and e["message"]["role"] == "assistant"
    ]
    assert len(updates) == len(replies) == 6
    assert set(updates[-1]) - {"type"} == USAGE_KEYS
    assert updates[-1]["contextWindow"] == 100_000
    reported = sum(u["input"] for u in r.agent.usages)
    assert updates[-1]["input"] == reported
    # The scripted model counts 4 characters per token of the same JSON: learned, not assumed.
    assert r.keeper.calibration.chars_per_token == pytest.approx(4.0, abs=0.05)
    usage = r.keeper.usage(r.harness)
    assert 0 < usage["contextTokens"] < 100_000


async def test_requests_send_the_prompt_the_run_captured_even_when_it_changes_mid_run(
    tmp_path: Path,
) -> None:
    """The Harness is the one owner of the run's prompt: a rebuild while the run is at a
    tool (or before its first request) is the next run's, never this run's."""
    gate, entered = asyncio.Event(), asyncio.Event()
    look = gated_tool(gate, entered, name="look")
    replies = [Reply(calls=(("look", {"text": "x"}),)), Reply(text="a"), Reply(text="b")]
    r = rig(tmp_path, window=100_000, replies=replies, system="SYSTEM ONE", tools=lambda _: [look])
    run = r.harness.prompt("hi")
    await entered.wait()
    r.harness.set_system("SYSTEM TWO")
    r.harness.set_tools([])
    gate.set()
    await run.wait()
    first, second = r.agent.requests
    assert first.system == second.system == "SYSTEM ONE"
    assert [t["name"] for t in first.tools] == [t["name"] for t in second.tools] == ["look"]
    assert first.cache_marks == (0,)
    again = r.harness.prompt("again")
    r.harness.set_system("SYSTEM THREE")  # accepted, not yet sent: still this run's TWO
    await again.wait()
    assert r.agent.requests[2].system == "SYSTEM TWO" and r.agent.requests[2].tools == []


async def test_manual_compaction_with_instructions(tmp_path: Path) -> None:
    settings = ContextSettings(keep_recent_tokens=150)
    r = rig(tmp_path, window=100_000, settings=settings)
    names = write_files(tmp_path / "project", 5)
    for index, name in enumerate(names):
        await r.harness.prompt(f"{GOAL if index == 0 else ''} Read {name}.").wait()
    before = len(r.harness.messages)
    outcome = await r.keeper.compact(r.harness, instructions="the port numbers")
    assert outcome["compacted"] is True
    assert outcome["tokensAfter"] < outcome["tokensBefore"]
    assert len(r.harness.messages) < before
    assert r.harness.messages == r.log.replay()
    assert (
        "Focus the summary on: the port numbers"
        in r.summary_model.requests[0].messages[0]["content"]
    )
    kinds = [e["type"] for e in r.events[-3:]]
    assert kinds == ["compaction_start", "compaction_end", "usage_update"]
    assert r.events[-3]["reason"] == "manual"


async def test_the_summary_call_is_counted_in_the_session_totals(tmp_path: Path) -> None:
    r = rig(tmp_path, window=100_000, settings=ContextSettings(keep_recent_tokens=150))
    for name in write_files(tmp_path / "project", 5):
        await r.harness.prompt(f"Read {name}.").wait()
    before = r.keeper.usage(r.harness)
    assert (await r.keeper.compact(r.harness))["compacted"] is True
    paid = r.summary_model.usages[0]
    after = r.keeper.usage(r.harness)
    assert after["output"] == before["output"] + paid["output"] > before["output"]
    assert after["input"] == before["input"] + paid["input"]
    fresh = Housekeeper(r.log, r.agent, ContextSettings())  # a restart reads the same totals
    assert {k: v for k, v in fresh.usage(r.harness).items() if k != "contextTokens"} == {
        k: v for k, v in after.items() if k != "contextTokens"
    }


async def test_manual_compaction_is_refused_while_running(tmp_path: Path) -> None:
    r = rig(tmp_path, window=100_000, replies=[Reply(text="slow", delay=0.05)])
    run = r.harness.prompt("hi")
    with pytest.raises(SessionBusy):
        await r.keeper.compact(r.harness)
    await run.wait()


def test_an_unknown_policy_is_refused_by_name(tmp_path: Path) -> None:
    r = rig(tmp_path)
    with pytest.raises(ValueError, match="'fast'"):
        Housekeeper(r.log, r.agent, ContextSettings(policy="fast"))


def test_reserve_defaults() -> None:
    assert ContextSettings().reserve(200_000) == 16_384
    assert ContextSettings().reserve(2_000) == 400
    assert ContextSettings(reserve_tokens=900).reserve(2_000) == 900


async def test_remembered_sizes_and_views_build_the_same_request_as_a_full_rebuild(
    tmp_path: Path,
) -> None:
    """Principle 5 with the per-message caches of a long run: at every step of a record
    that grows (and is once replaced), the request a long-lived Housekeeper builds is
    the one a fresh Housekeeper, with the same clearing state and calibration and no
    memory, builds from scratch."""
    from crank.agent.loop import RunPrompt
    from crank.agent.messages import assistant_message, tool_result, user_message
    from crank.agent.scripted import ScriptedModel

    model = ScriptedModel([], context_window=4_000)
    settings = ContextSettings(policy="clear", clear_at_tokens=600)
    with SessionLog.create(tmp_path / "s", str(tmp_path)) as log:
        lived = Housekeeper(log, model, settings)
        prompt = RunPrompt("system", ())
        record: list[Any] = [user_message("start")]
        for step in range(40):
            call = {"type": "toolCall", "id": f"c{step}", "name": "read", "arguments": {}}
            record.append(assistant_message([call], stop_reason="toolUse"))
            record.append(tool_result(f"c{step}", "read", f"result {step} " * (step % 7 * 30)))
            if step == 25:
                record = [user_message("a replaced transcript"), *record[-4:]]
            built = await lived.build_request(record, prompt)
            fresh = Housekeeper(log, model, settings)
            fresh._view._clear = lived._view._clear
            fresh._view.calibration = copy.copy(lived._view.calibration)
            rebuilt = await fresh.build_request(record, prompt)
            assert built.messages == rebuilt.messages, f"step {step}"
            assert built.cache_marks == rebuilt.cache_marks
            assert lived._view.last_request_chars == fresh._view.last_request_chars


def test_running_size_equals_the_plain_sum_as_views_change() -> None:
    """Views that grow, lose a message, get a note in place of a result, or are replaced
    whole: the running sum is the sum of the sizes every time."""
    from crank.agent.messages import user_message
    from crank.session.estimate import RunningSize, message_chars

    pool = [user_message("m" * n) for n in range(30)]
    running = RunningSize(message_chars)
    views = [
        pool[:5],
        pool[:9],
        pool[:9],
        pool[:4],
        [pool[0], pool[20], *pool[2:12]],
        pool[15:],
        [],
    ]
    for view in views:
        assert running.total(view) == sum(message_chars(m) for m in view)


async def test_a_healthy_run_of_tool_calls_logs_no_repairs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Between a reply's calls and their results the record has a hole the view would
    fill; an estimate taken then (the usage after each reply) is no repair to report.
    Logged once per turn before."""
    names = write_files(tmp_path / "project", 4)
    r = rig(tmp_path, window=200_000)
    with caplog.at_level("WARNING", logger="crank.session.housekeeping"):
        for name in names:
            await r.harness.prompt(f"read {name}").wait()
    assert not [m for m in caplog.messages if "repairs the record" in m]
    assert not r.keeper.repairs
    r.log.close()
