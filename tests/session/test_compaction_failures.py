"""Compaction when things go wrong, and the traps around it: a failed or empty summary,
stale usage, summaries of summaries, overflow recovery, the summary's own window."""

from __future__ import annotations

from pathlib import Path

from crank.agent.messages import assistant_message, user_message
from crank.agent.scripted import Reply
from crank.session.compaction_summary import SYSTEM, UPDATE_SYSTEM
from crank.session.housekeeping import ContextSettings
from crank.session.identifiers import HEADING, found_in, with_identifiers

from .context_helpers import GOAL, Rig, largest_request, rig, write_files


async def _prompts(r: Rig, tmp_path: Path, count: int, start: int = 0) -> list[str]:
    names = write_files(tmp_path / "project", start + count)[start:]
    outcomes = []
    for index, name in enumerate(names):
        prefix = f"{GOAL}. " if start + index == 0 else ""
        outcomes.append(await r.harness.prompt(f"{prefix}Read {name}.").wait())
    return outcomes


async def test_a_failed_summary_appends_nothing_and_the_prompt_still_runs(tmp_path: Path) -> None:
    r = rig(tmp_path, summary_replies=[Reply(error="503 overloaded")] * 20)
    outcomes = await _prompts(r, tmp_path, 9)
    assert outcomes == ["stop"] * 9
    assert r.compactions() == []
    ends = [e for e in r.events if e["type"] == "compaction_end"]
    assert ends and all(not e["compacted"] and "503 overloaded" in e["error"] for e in ends)
    assert all(e["error"].count("nothing was written") == 1 for e in ends)  # said once
    assert len(r.summary_model.requests) == len(ends)


async def test_an_empty_summary_appends_nothing(tmp_path: Path) -> None:
    settings = ContextSettings(keep_recent_tokens=200)
    r = rig(tmp_path, window=100_000, summary_replies=[Reply(text="  ")], settings=settings)
    await _prompts(r, tmp_path, 6)
    entries = len(r.log.entries())
    outcome = await r.keeper.compact(r.harness, instructions="the ports")
    assert outcome["compacted"] is False and "empty" in outcome["reason"]
    assert len(r.log.entries()) == entries
    assert r.events[-1] == {
        "type": "compaction_end",
        "compacted": False,
        "error": outcome["reason"],
    }


async def test_no_second_compaction_from_a_stale_usage_figure(tmp_path: Path) -> None:
    r = rig(tmp_path, window=2_000, replies=[])
    # A history whose newest reply reported a request close to the window.
    for index in range(8):
        await r.log.append_message(user_message(f"{GOAL}. question {index} " + "x" * 300))
        reply = assistant_message([{"type": "text", "text": f"answer {index}"}])
        reply["usage"] = {"input": 1_700, "output": 5, "cacheRead": 0, "cacheWrite": 0}
        await r.log.append_message(reply)
    r.harness.replace_messages(r.log.replay())
    first = await r.keeper.compact(r.harness, reason="threshold")
    assert first["compacted"] is True
    kept = r.harness.messages
    assert kept[-1]["usage"]["input"] == 1_700  # the stale figure is still in the tail
    assert first["tokensAfter"] < r.keeper.threshold()
    for _ in range(3):
        await r.keeper.before_request(r.harness)
    assert len(r.compactions()) == 1
    assert len(r.summary_model.requests) == 1


async def test_a_summary_of_a_summary_uses_the_update_prompt(tmp_path: Path) -> None:
    r = rig(tmp_path, window=2_000)
    await _prompts(r, tmp_path, 16)
    assert len(r.compactions()) >= 2
    first, second = r.summary_model.requests[:2]
    assert first.system == SYSTEM and "<conversation>" in first.messages[0]["content"]
    assert second.system == UPDATE_SYSTEM
    existing = second.messages[0]["content"]
    assert "<existing-summary>" in existing
    assert r.compactions()[0]["summary"][:40] in existing
    assert first.tools == [] and second.tools == []


async def test_overflow_is_compacted_and_retried_once(tmp_path: Path) -> None:
    r = rig(tmp_path, window=2_000, settings=ContextSettings(policy="cache"))
    outcomes = await _prompts(r, tmp_path, 12)
    assert outcomes == ["stop"] * 12
    starts = [e for e in r.events if e["type"] == "compaction_start"]
    assert starts and {e["reason"] for e in starts} == {"overflow"}
    retries = [e for e in r.events if e["type"] == "retry_end"]
    assert len(retries) == len(starts) and all(e["success"] for e in retries)
    refused = [m for m in r.harness.messages if m.get("errorKind") == "overflow"]
    assert len(refused) == len(starts)  # kept in the record, left out of the view
    told = [e for e in r.events if e["type"] == "notice"]
    assert [e["kind"] for e in told] == ["window_learned"] * len(starts), "one line each"
    assert told[0]["message"] == "the server's window is 2,000 tokens: compacted and retried"


async def test_overflow_recovery_is_never_a_loop(tmp_path: Path) -> None:
    r = rig(
        tmp_path,
        window=2_000,
        settings=ContextSettings(policy="cache"),
        summary_replies=[Reply(error="summariser down")] * 20,
    )
    outcomes = await _prompts(r, tmp_path, 12)
    assert outcomes[-1] == "error"
    last_run = r.types()[len(r.types()) - 1 - r.types()[::-1].index("agent_start") :]
    assert last_run.count("compaction_start") == 1
    assert last_run.count("retry_start") == 1
    assert [e for e in r.events if e["type"] == "retry_end"][-1]["success"] is False


async def test_the_summary_request_fits_the_summarisers_window(tmp_path: Path) -> None:
    r = rig(tmp_path, window=4_000, summary_window=700)
    await _prompts(r, tmp_path, 20)
    assert len(r.compactions()) >= 1
    assert largest_request(r.summary_model) <= 700
    assert all(e["compacted"] for e in r.events if e["type"] == "compaction_end")


def test_missing_identifiers_are_appended_under_their_own_heading() -> None:
    call = assistant_message(
        [
            {
                "type": "toolCall",
                "id": "c1",
                "name": "bash",
                "arguments": {"command": "pytest tests/test_api.py"},
            }
        ]
    )
    result = {
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": "bash",
        "content": "error E0425 at https://example.com/x see #42 commit 9f3a2b1c",
        "isError": True,
        "timestamp": 1,
    }
    found = list(dict.fromkeys(found_in([call, result])))  # type: ignore[list-item]
    assert found[0] == "tests/test_api.py"
    assert {"E0425", "https://example.com/x", "#42", "9f3a2b1c"} <= set(found)
    summary = with_identifiers("We ran tests/test_api.py; issue #42 is open.", found)
    _, tail = summary.split(HEADING)
    assert "E0425" in tail and "9f3a2b1c" in tail and "https://example.com/x" in tail
    assert "#42" not in tail and "tests/test_api.py" not in tail
    assert with_identifiers(summary, found) == summary  # nothing missing any more
