"""One truth for files (issue 14), at the tool layer: a change is on disk before the
tool returns, a change that did not reach the disk is an error, and where the editor's
text and the disk differ the model is told which one it is looking at.

The editor here is ``MemoryDocuments`` (an in-memory stand-in that saves, as the real
clients do when asked) or a hand-written ``apply_edit`` that misbehaves on purpose; the
real editors are driven in tests/lsp/test_one_truth.py and the client suites.
"""

from __future__ import annotations

from pathlib import Path

from crank.agent.tools import Tool
from crank.tools import EditNotSaved, MemoryDocuments, ToolContext, standard_tools

from .conftest import Approvals, call


async def test_an_edit_to_an_open_file_is_on_disk_before_the_next_command(
    root: Path, docs: MemoryDocuments, tools: list[Tool]
) -> None:
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    docs.open(root / "calc.py", "def add(a, b):\n    return a - b\n")
    edit = {"path": "calc.py", "oldText": "return a - b", "newText": "return a + b"}
    result = await call(tools, "edit", edit)
    assert not result.is_error, result.content
    grep = await call(tools, "bash", {"command": "grep return calc.py"})
    assert grep.content.strip() == "return a + b"
    read = await call(tools, "read", {"path": "calc.py"})
    assert read.content == "def add(a, b):\n    return a + b"  # no note: they agree


async def test_an_editor_that_keeps_the_change_in_the_buffer_is_an_error(root: Path) -> None:
    """The bug of issue 14: applyEdit succeeded, nothing was saved, the tool said done."""
    docs = MemoryDocuments()
    (root / "calc.py").write_text("x = 1\n")
    docs.open(root / "calc.py", "x = 1\n")

    async def buffer_only(path: Path, old: str, new: str) -> str | None:
        docs.texts[path] = new  # applied to the buffer, never saved
        return None

    tools = standard_tools(ToolContext(root, documents=docs, apply_edit=buffer_only))
    result = await call(tools, "edit", {"path": "calc.py", "oldText": "1", "newText": "2"})
    assert result.is_error
    assert "the file on disk does not hold the editor's text" in result.content


async def test_a_change_left_unsaved_by_the_editor_says_so(root: Path) -> None:
    docs = MemoryDocuments()
    (root / "calc.py").write_text("x = 1\n")
    docs.open(root / "calc.py", "x = 1\n")

    async def not_saved(path: Path, old: str, new: str) -> str | None:
        docs.texts[path] = new
        raise EditNotSaved("the disk is full.")

    tools = standard_tools(ToolContext(root, documents=docs, apply_edit=not_saved))
    result = await call(tools, "write", {"path": "calc.py", "content": "x = 2\n"})
    assert result.is_error
    assert "is in the editor's buffer but not on disk: the disk is full." in result.content
    assert "Commands (bash) still see the old file." in result.content


async def test_the_editors_note_reaches_the_model(root: Path) -> None:
    docs = MemoryDocuments()
    (root / "a.py").write_text("v = 1\n")
    docs.open(root / "a.py", "v = 1\n")

    async def saved_with_note(path: Path, old: str, new: str) -> str | None:
        await docs.apply_edit(path, old, new)
        return "The user's unsaved changes were saved too."

    tools = standard_tools(ToolContext(root, documents=docs, apply_edit=saved_with_note))
    result = await call(tools, "edit", {"path": "a.py", "oldText": "1", "newText": "2"})
    assert not result.is_error, result.content
    assert "(1 replacement, in the editor and on disk). The user's unsaved" in result.content


async def test_read_grep_and_bash_say_when_the_editor_and_the_disk_differ(
    root: Path, docs: MemoryDocuments, tools: list[Tool]
) -> None:
    (root / "calc.py").write_text("return a - b\n")
    (root / "same.py").write_text("return 1\n")
    docs.open(root / "calc.py", "return a + b  # typed, not saved\n")
    docs.open(root / "same.py", "return 1\n")

    read = await call(tools, "read", {"path": "calc.py"})
    assert "calc.py is open in the editor and this is the editor's text" in read.content
    assert read.details is not None and read.details["unsaved"] is True
    same = await call(tools, "read", {"path": "same.py"})
    assert same.content == "return 1" and same.details is not None
    assert same.details["unsaved"] is False

    grep = await call(tools, "grep", {"pattern": "return"})
    assert "calc.py:1: return a + b" in grep.content
    assert "[Searched the editor's text of calc.py, which differs" in grep.content
    assert "same.py," not in grep.content
    none = await call(tools, "grep", {"pattern": "absent"})
    assert none.content.startswith("No matches") and "calc.py" in none.content

    bash = await call(tools, "bash", {"command": "cat calc.py"})
    assert bash.content.startswith("return a - b")
    assert "[Note: the editor's text of calc.py differs from the disk" in bash.content
    assert "same.py" not in bash.content


async def test_no_note_when_nothing_is_open(root: Path, tools: list[Tool]) -> None:
    (root / "a.py").write_text("x\n")
    bash = await call(tools, "bash", {"command": "cat a.py"})
    assert bash.content == "x"


async def test_the_question_says_when_the_users_unsaved_changes_go_with_the_change(
    root: Path, docs: MemoryDocuments
) -> None:
    (root / "a.py").write_text("v = 1\n")
    (root / "b.py").write_text("w = 1\n")
    docs.open(root / "a.py", "v = 1\n# typed\n")
    docs.open(root / "b.py", "w = 1\n")
    approvals = Approvals()
    ctx = ToolContext(root, documents=docs, apply_edit=docs.apply_edit, approve=approvals)
    tools = standard_tools(ctx)
    await call(tools, "edit", {"path": "a.py", "oldText": "1", "newText": "2"})
    await call(tools, "edit", {"path": "b.py", "oldText": "1", "newText": "2"})
    first, second = (request["preview"] for request in approvals.requests)
    assert first.get("unsavedChanges") is True
    assert "unsavedChanges" not in second
