"""Long sessions under a small window: many prompts, and one prompt with many calls."""

from __future__ import annotations

import json
from pathlib import Path

from crank.agent.scripted import Reply
from crank.session import COMPACTION_PREFIX, resume

from .context_helpers import GOAL, largest_request, rig, write_files


def _same(a: object, b: object) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


async def test_forty_prompts_in_a_small_window(tmp_path: Path) -> None:
    r = rig(tmp_path, window=2_000)
    names = write_files(tmp_path / "project", 40)
    for index, name in enumerate(names):
        prefix = f"{GOAL}. " if index == 0 else ""
        run = r.harness.prompt(f"{prefix}Read {name} and tell me the value.")
        assert await run.wait() == "stop"
        last = r.harness.messages[-1]
        assert last["role"] == "assistant" and last["stopReason"] == "stop"
        assert last["content"][0]["type"] == "text"
        assert name in last["content"][0]["text"]  # answered from the file it read

    assert len(r.compactions()) >= 3
    assert largest_request(r.agent) <= 2_000
    assert not any(m.get("errorKind") == "overflow" for m in r.harness.messages)
    assert _same(r.log.replay(), list(r.harness.messages))
    assert _same(resume(r.log.path), list(r.harness.messages))
    final = r.agent.requests[-1].messages
    assert final[0]["role"] == "user" and final[0]["content"].startswith(COMPACTION_PREFIX)
    assert GOAL in final[0]["content"]


async def test_one_prompt_with_sixty_calls_compacts_between_turns(tmp_path: Path) -> None:
    names = write_files(tmp_path / "project", 60)
    replies = [Reply(calls=(("read", {"path": name}),)) for name in names]
    r = rig(tmp_path, window=2_000, replies=[*replies, Reply(text="All sixty read.")])
    run = r.harness.prompt(f"{GOAL}. Read every file, one at a time.")
    assert await run.wait() == "stop"

    assert r.harness.messages[-1]["content"] == [{"type": "text", "text": "All sixty read."}]
    assert len(r.agent.requests) == 61
    assert largest_request(r.agent) <= 2_000
    starts = [e for e in r.events if e["type"] == "compaction_start"]
    assert len(starts) >= 3 and {e["reason"] for e in starts} == {"threshold"}
    # every compaction happened inside the one run, between turns
    types = r.types()
    assert types.index("agent_start") < types.index("compaction_start")
    assert types.index("compaction_end") < types.index("agent_end")
    assert all(e["compacted"] for e in r.events if e["type"] == "compaction_end")
    assert _same(r.log.replay(), list(r.harness.messages))
    assert GOAL in r.agent.requests[-1].messages[0]["content"]
