"""Workspace pieces with nothing above them: delta coalescing and permission rules."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from crank.workspace import EventStream, Permissions, command_prefix


async def test_coalesced_deltas_concatenate_exactly_and_keep_order() -> None:
    sent: list[dict[str, Any]] = []
    stream = EventStream("file:///w", sent.append, coalesce_ms=50)
    for piece in ["Hel", "lo", " wor", "ld"]:
        stream.emit(
            "s",
            "r",
            {"type": "message_update", "delta": {"kind": "text", "contentIndex": 0, "text": piece}},
        )
    stream.emit(
        "s",
        "r",
        {"type": "message_update", "delta": {"kind": "toolCall", "contentIndex": 1, "text": "{}"}},
    )
    stream.emit("s", "r", {"type": "message_end", "message": {}})
    await asyncio.sleep(0)
    events = [e["event"] for e in sent]
    assert events[0]["delta"]["text"] == "Hello world"
    assert events[1]["delta"] == {"kind": "toolCall", "contentIndex": 1, "text": "{}"}
    assert events[2]["type"] == "message_end"
    assert [e["seq"] for e in sent] == [1, 2, 3]


async def test_a_coalesced_tool_call_delta_keeps_the_call_id_and_name() -> None:
    """Issue 34.1: the first delta of a tool call names it; joined with the deltas after
    it, the call's id and tool name still go out (a client draws the card from it)."""
    sent: list[dict[str, Any]] = []
    stream = EventStream("file:///w", sent.append, coalesce_ms=50)
    first: Any = {
        "kind": "toolCall",
        "contentIndex": 0,
        "text": '{"pa',
        "toolCallId": "call_1",
        "toolName": "read",
    }
    stream.emit("s", "r", {"type": "message_update", "delta": first})
    for piece in ['th": ', '"a.py"}']:
        delta: Any = {"kind": "toolCall", "contentIndex": 0, "text": piece}
        stream.emit("s", "r", {"type": "message_update", "delta": delta})
    second: Any = {**first, "text": "{}", "toolCallId": "call_2", "toolName": "ls"}
    stream.emit("s", "r", {"type": "message_update", "delta": second})
    stream.emit("s", "r", {"type": "message_end", "message": {}})  # flushes, no timer
    deltas = [e["event"]["delta"] for e in sent if e["event"]["type"] == "message_update"]
    assert deltas == [
        {
            "kind": "toolCall",
            "contentIndex": 0,
            "text": '{"path": "a.py"}',
            "toolCallId": "call_1",
            "toolName": "read",
        },
        {
            "kind": "toolCall",
            "contentIndex": 0,
            "text": "{}",
            "toolCallId": "call_2",
            "toolName": "ls",
        },
    ]


def test_rules_remember_prefixes_and_persist(tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    perms = Permissions(tmp_path, "ask", rules)
    ls: Any = {"toolName": "bash", "arguments": {}, "preview": {"kind": "command", "command": "ls"}}
    lsa: Any = {
        "toolName": "bash",
        "arguments": {},
        "preview": {"kind": "command", "command": "ls -a"},
    }
    lsd: Any = {
        "toolName": "bash",
        "arguments": {},
        "preview": {"kind": "command", "command": "lsof"},
    }
    assert perms.needs_asking(ls)
    perms.remember(ls, "allowAlways")
    assert not perms.needs_asking(lsa)
    assert perms.needs_asking(lsd)
    assert not Permissions(tmp_path, "ask", rules).needs_asking(lsa)
    assert command_prefix("npm test --watch") == "npm test"
    edit: Any = {
        "toolName": "edit",
        "arguments": {},
        "preview": {"kind": "diff", "path": str(tmp_path / "a"), "oldText": "", "newText": ""},
    }
    assert not Permissions(tmp_path, "autoEdit", rules).needs_asking(edit)
    assert Permissions(tmp_path, "autoEdit", rules).needs_asking(lsd)
