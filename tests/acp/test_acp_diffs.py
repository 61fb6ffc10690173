"""Edit and write calls show the change to the whole file, as ACP's ``diff`` says.

The spec's diff: ``path`` absolute, ``oldText`` "the original content (null for new
files)", ``newText`` "the new content after modification"; Zed builds its review from
these fields. Both forms of ``edit`` and a ``write`` over a file are run in ask mode,
so the question, the diff and the status sequence are checked together, in the order
they crossed the wire (the judge's record).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import acp

from tests.support.model_server import ModelServer

from .helpers import RecordingClient, crank_acp
from .judge import Judge

BEFORE = "FACTOR = 0\nOFFSET = 0\nprint(FACTOR)\n"
SINGLE = {"path": "calc.py", "oldText": "FACTOR = 0", "newText": "FACTOR = 1"}
AFTER_SINGLE = BEFORE.replace("FACTOR = 0", "FACTOR = 1")
MANY = {
    "path": "calc.py",
    "edits": [
        {"oldText": "FACTOR = 1", "newText": "FACTOR = 2"},
        {"oldText": "OFFSET = 0", "newText": "OFFSET = 5"},
    ],
}
AFTER_MANY = AFTER_SINGLE.replace("FACTOR = 1", "FACTOR = 2").replace("OFFSET = 0", "OFFSET = 5")
WRITTEN = "FACTOR = 3\n"
NEW = "print('new')\n"


def updates_of(judge: Judge, call_id: str) -> list[dict[str, Any]]:
    """The call's own messages in wire order: its updates, and its permission question
    (as ``{"question": toolCall}``)."""
    out: list[dict[str, Any]] = []
    for message in judge.sent("agent"):
        params = message.get("params") or {}
        if message.get("method") == "session/update":
            update = params["update"]
            if update.get("toolCallId") == call_id:
                out.append(update)
        elif (
            message.get("method") == "session/request_permission"
            and params["toolCall"]["toolCallId"] == call_id
        ):
            out.append({"question": params["toolCall"]})
    return out


def diffs(update: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in update.get("content") or [] if c.get("type") == "diff"]


async def test_edits_and_writes_carry_the_whole_file_in_ask_mode(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    calc = folder / "calc.py"
    calc.write_text(BEFORE)
    calls = [
        ("single", "edit", SINGLE),
        ("many", "edit", MANY),
        ("over", "write", {"path": "calc.py", "content": WRITTEN}),
        ("fresh", "write", {"path": "new.py", "content": NEW}),
    ]
    script = {
        "replies": [
            *({"toolCalls": [{"id": i, "name": n, "arguments": a}]} for i, n, a in calls),
            {"text": "done"},
        ]
    }
    client = RecordingClient(answers=["allow"] * 4)
    judge = Judge()
    async with (
        ModelServer(script) as model,
        crank_acp(model, tmp_path, client, "--permission-mode", "ask", judge=judge) as conn,
    ):
        session = await conn.new_session(cwd=str(folder))
        answer = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("go")])
        assert answer.stop_reason == "end_turn"
    assert (folder / "new.py").read_text() == NEW and calc.read_text() == WRITTEN
    expected = {
        "single": (str(calc), BEFORE, AFTER_SINGLE),
        "many": (str(calc), AFTER_SINGLE, AFTER_MANY),
        "over": (str(calc), AFTER_MANY, WRITTEN),
        "fresh": (str(folder / "new.py"), None, NEW),
    }
    for call_id, (path, old, new) in expected.items():
        seen = updates_of(judge, call_id)
        steps = [
            "question" if "question" in u else u.get("status")
            for u in seen
            if "question" in u or u.get("status")
        ]
        assert steps == ["pending", "question", "in_progress", "completed"], (call_id, steps)
        question = seen[[("question" in u) for u in seen].index(True)]["question"]
        assert question["status"] == "pending"
        assert question["locations"] == [{"path": path}]
        shown = [d for u in seen for d in diffs(u.get("question", u))]
        assert shown, f"{call_id}: no diff shown"
        for diff in shown:
            assert (diff["path"], diff.get("oldText"), diff["newText"]) == (path, old, new), call_id
        assert diffs(seen[-1]), f"{call_id}: the final update keeps the diff"


def test_the_diff_is_bounded_and_says_what_it_leaves_out() -> None:
    """Past ``DIFF_CHARS`` a sentence names the file and its sizes; an old file that
    was not loaded is never shown as a new file (``oldText`` null)."""
    from crank.acp.translate import DIFF_CHARS, diff_content

    path = "/w/big.txt"
    whole = {"path": path, "oldText": "a\n", "newText": "b\n"}
    assert diff_content(whole) == [
        {"type": "diff", "path": path, "oldText": "a\n", "newText": "b\n"}
    ]
    created = diff_content({**whole, "oldText": "", "created": True})
    assert created[0]["oldText"] is None
    huge = diff_content({**whole, "newText": "x" * DIFF_CHARS})
    assert huge[0]["type"] == "content" and path in huge[0]["content"]["text"]
    omitted = diff_content({**whole, "oldText": "", "oldTextOmitted": 9_000_000})
    assert omitted[0]["type"] == "content" and "9000000 bytes" in omitted[0]["content"]["text"]
    assert diff_content({"declined": True}) == [] and diff_content(None) == []
