"""The JSON the host sends, checked against a recorded sequence.

A scripted session (a stand-in model: only the wire shapes are under test) goes
through every kind of event the host makes: a streamed reply with thinking and text,
tool calls (allowed, declined, unknown), a follow-up queued while the run waits on a
question, a manual compaction, a prompt rebuilt by a mode change, a new session.
The envelopes are normalised (times, ids, temporary paths and token counts vary from
run to run; tool output text and details belong to the tools' own tests; coalesced
deltas are joined, since how many a 4 ms window holds depends on
the machine) and compared with ``recorded/host_events.json``, which was recorded before
the events were typed. A changed key, a renamed type or a reordered event fails here.
Set ``CRANK_RECORD_EVENTS=1`` to record again, only for an intended, documented change.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .test_host import AnsweringEditor, resolved, scripted_host

RECORDING = Path(__file__).parent / "recorded" / "host_events.json"
VARYING = {"timestamp", "entryId", "sessionId", "runId", "workspace", "hash"}
COUNTS = {
    "contextTokens",
    "contextWindow",
    "input",
    "output",
    "cacheRead",
    "cacheWrite",
    "cost",
    "tokensBefore",
    "tokensAfter",
}


def normalise(value: Any, tmp: str) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        # What a tool says is the tool's business (its own tests pin it), not the wire's.
        tool_output = value.get("role") == "toolResult" or "isError" in value
        for key, item in value.items():
            if tool_output and key == "content":
                out[key] = "<tool output>"
            elif tool_output and key == "details":
                out[key] = "<details>"
            elif key in VARYING:
                out[key] = f"<{key}>"
            elif key in COUNTS and isinstance(item, int | float):
                out[key] = "<count>"
            else:
                out[key] = normalise(item, tmp)
        return out
    if isinstance(value, list):
        return [normalise(item, tmp) for item in value]
    if isinstance(value, str):
        return value.replace(tmp, "<tmp>")
    return value


def joined(envelopes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Adjacent deltas of one block as one (the stream's coalescing depends on time)."""
    out: list[dict[str, Any]] = []
    for envelope in envelopes:
        event = envelope["event"]
        if out and event["type"] == "message_update":
            last = out[-1]["event"]
            same = ("kind", "contentIndex")
            if last["type"] == "message_update" and all(
                last["delta"][k] == event["delta"][k] for k in same
            ):
                last["delta"] = {
                    **last["delta"],
                    "text": last["delta"]["text"] + event["delta"]["text"],
                }
                continue
        out.append(json.loads(json.dumps(envelope)))
    return out


REPLIES = [
    {
        "thinking": "Look first.",
        "text": "Writing two files.",
        "calls": [
            {"name": "write", "arguments": {"path": "a.txt", "content": "a\n"}},
            {"name": "write", "arguments": {"path": "b.txt", "content": "b\n"}},
            {"name": "nosuch", "arguments": {}},
        ],
    },
    {"text": "One was declined."},
    {"text": "Following up."},
    {"text": "## Goal\nwrite files\n## Progress\ndone"},
    {"text": "Read-only now."},
]


async def record(tmp_path: Path) -> list[dict[str, Any]]:
    editor = AnsweringEditor({"call_1": "allow"})
    host = scripted_host(tmp_path, editor, REPLIES)
    asked: list[str] = []

    async def ask_and_queue(params: dict[str, Any]) -> dict[str, Any]:
        if not asked:
            host.follow_up("and then?")  # a queue_update inside the run, at a fixed point
        asked.append(params["toolCallId"])
        return {"decision": "allow" if params["toolCallId"] == "call_1" else "reject"}

    editor.ask_permission = ask_and_queue  # type: ignore[method-assign]
    await host.start()
    try:
        host.prompt_run("write a and b")
        run = host.harness.current_run
        assert run is not None
        await run.wait()
        await host.compact(None)
        await host.set_permission_mode("readOnly")
        host.prompt_run("and now?")
        again = host.harness.current_run
        assert again is not None
        await again.wait()
        host.new_session()
    finally:
        await host.close()
    seqs = [e["seq"] for e in editor.events if e["sessionId"] == editor.events[0]["sessionId"]]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    tmp = resolved(tmp_path)
    return [
        normalise({k: v for k, v in e.items() if k != "seq"}, tmp) for e in joined(editor.events)
    ]


def recording(seen: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if os.environ.get("CRANK_RECORD_EVENTS") == "1":
        RECORDING.write_text(json.dumps(seen, indent=1) + "\n")
    recorded: list[dict[str, Any]] = json.loads(RECORDING.read_text())
    return recorded


async def test_the_events_on_the_wire_match_the_recording(tmp_path: Path) -> None:
    seen = await record(tmp_path)
    recorded = recording(seen)
    assert [e["event"]["type"] for e in seen] == [e["event"]["type"] for e in recorded]
    assert seen == recorded
