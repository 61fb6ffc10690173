"""``note_save`` / ``note_read`` at the tool boundary: one result per call, refusals
said plainly, output bounded like every tool's, offered in read-only mode and never
asking for permission."""

from __future__ import annotations

from pathlib import Path

from crank.agent.messages import ToolCallBlock
from crank.agent.model import AbortSignal
from crank.agent.tools import MAX_BYTES, run_tool
from crank.session.notes import Notes
from crank.tools import ApprovalRequest, Decision, ToolContext
from crank.tools.notes import make_note_tools
from crank.workspace.toolset import session_tools


def call(name: str, **arguments: object) -> ToolCallBlock:
    return {"type": "toolCall", "id": "c1", "name": name, "arguments": arguments}


async def run(tools: list, name: str, **arguments: object) -> tuple[str, bool]:  # type: ignore[type-arg]
    result, _ = await run_tool(tools, call(name, **arguments), AbortSignal(), lambda _: None)
    return result["content"], result["isError"]


async def test_save_then_read_one_and_all(tmp_path: Path) -> None:
    tools = make_note_tools(Notes(tmp_path / "n.notes.json"))
    text, error = await run(tools, "note_read")
    assert not error and "No notes" in text
    text, error = await run(tools, "note_save", key="tests", text="pytest -q tests/unit")
    assert not error and "Saved note 'tests'" in text and "Notes: tests" in text
    text, error = await run(tools, "note_save", key="tests", text="pytest -q")
    assert not error and text.startswith("Replaced")
    await run(tools, "note_save", key="db", text="sqlite at var/app.db")
    text, error = await run(tools, "note_read", key="tests")
    assert not error and text == "[note tests]\npytest -q"
    text, _ = await run(tools, "note_read")
    assert text == "[note db]\nsqlite at var/app.db\n\n[note tests]\npytest -q"


async def test_refusals_are_results_that_say_what_was_wrong(tmp_path: Path) -> None:
    tools = make_note_tools(Notes(tmp_path / "n.notes.json"))
    text, error = await run(tools, "note_save", key="no spaces", text="x")
    assert error and "not allowed" in text and "letters, digits" in text
    text, error = await run(tools, "note_read", key="missing")
    assert error and "no note 'missing'" in text and "(none yet)" in text
    text, error = await run(tools, "note_save", key="k")
    assert error and "text" in text  # the schema names the missing field
    (tmp_path / "n.notes.json").write_text("[]")
    text, error = await run(tools, "note_read")
    assert error and "cannot be read" in text


async def test_reading_every_note_is_bounded_like_any_tool_output(tmp_path: Path) -> None:
    notes = Notes(tmp_path / "n.notes.json")
    for index in range(20):
        notes.save(f"k{index:02d}", "y" * 7_999)
    text, error = await run(make_note_tools(notes), "note_read")
    assert not error and len(text.encode()) < MAX_BYTES + 500
    assert "[Output truncated" in text


async def test_offered_in_read_only_mode_and_never_asked_about(tmp_path: Path) -> None:
    asked: list[ApprovalRequest] = []

    async def approve(request: ApprovalRequest) -> Decision:
        asked.append(request)
        return Decision.reject("no")

    ctx = ToolContext(tmp_path, approve=approve)
    notes = Notes(tmp_path / "sessions" / "n.notes.json")
    tools = session_tools(ctx, None, read_only=True, notes=notes)
    names = [tool.name for tool in tools]
    assert "note_save" in names and "note_read" in names and "write" not in names
    _, error = await run(tools, "note_save", key="k", text="v")
    assert not error and asked == []
    assert notes.read("k") == "v"
    assert notes.path.parent.name == "sessions", "written beside the session only"
