from __future__ import annotations

from pathlib import Path

from crank.agent.tools import Tool
from crank.tools import Decision, EditRefused, MemoryDocuments, ToolContext, standard_tools

from .conftest import Approvals, call


async def test_single_pair_at_top_level(root: Path, tools: list[Tool]) -> None:
    (root / "a.py").write_text("x = 1\ny = 2\n")
    result = await call(tools, "edit", {"path": "a.py", "oldText": "y = 2", "newText": "y = 3"})
    assert not result.is_error, result.content
    assert (root / "a.py").read_text() == "x = 1\ny = 3\n"
    assert "-y = 2\n+y = 3" in result.content
    assert result.details is not None
    assert set(result.details) == {"path", "oldText", "newText", "diff"}
    assert result.details["newText"] == "x = 1\ny = 3\n"


async def test_several_edits_apply_together(root: Path, tools: list[Tool]) -> None:
    (root / "a.py").write_text("a\nb\nc\n")
    edits = [{"oldText": "c", "newText": "C"}, {"oldText": "a", "newText": "A"}]
    result = await call(tools, "edit", {"path": "a.py", "edits": edits})
    assert not result.is_error
    assert (root / "a.py").read_text() == "A\nb\nC\n"
    assert "2 replacements" in result.content


async def test_all_or_nothing(root: Path, tools: list[Tool]) -> None:
    (root / "a.py").write_text("a\nb\n")
    edits = [{"oldText": "a", "newText": "A"}, {"oldText": "zzz", "newText": "Z"}]
    result = await call(tools, "edit", {"path": "a.py", "edits": edits})
    assert result.is_error
    assert "Edit 2: oldText was not found" in result.content
    assert "No changes were made" in result.content
    assert (root / "a.py").read_text() == "a\nb\n"


async def test_crlf_and_bom_are_kept(root: Path, tools: list[Tool]) -> None:
    (root / "w.txt").write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\nthree\r\n")
    result = await call(
        tools, "edit", {"path": "w.txt", "oldText": "one\ntwo", "newText": "uno\ndos"}
    )
    assert not result.is_error, result.content
    assert (root / "w.txt").read_bytes() == b"\xef\xbb\xbfuno\r\ndos\r\nthree\r\n"


async def test_tolerant_of_trailing_whitespace(root: Path, tools: list[Tool]) -> None:
    (root / "a.py").write_text("def f():   \n    return 1  \nend\n")
    old = "def f():\n    return 1"
    result = await call(tools, "edit", {"path": "a.py", "oldText": old, "newText": "def g():"})
    assert not result.is_error, result.content
    assert (root / "a.py").read_text() == "def g():\nend\n"


async def test_tolerant_of_typographic_quotes(root: Path, tools: list[Tool]) -> None:
    (root / "a.md").write_text("He said \u201chello\u201d and it\u2019s fine.\n")
    old = 'said "hello" and it\'s'
    result = await call(tools, "edit", {"path": "a.md", "oldText": old, "newText": "said hi and"})
    assert not result.is_error, result.content
    assert (root / "a.md").read_text() == "He said hi and fine.\n"


async def test_found_many_times_asks_for_context(root: Path, tools: list[Tool]) -> None:
    (root / "a.py").write_text("x = 1\nx = 1\nx = 1\n")
    result = await call(tools, "edit", {"path": "a.py", "oldText": "x = 1", "newText": "x = 2"})
    assert result.is_error
    assert "occurs 3 times" in result.content and "more surrounding lines" in result.content


async def test_not_found_shows_nearest_lines(root: Path, tools: list[Tool]) -> None:
    (root / "a.py").write_text("import os\ndef compute_total(items):\n    pass\n")
    result = await call(
        tools, "edit", {"path": "a.py", "oldText": "def compute_totals(item):", "newText": "x"}
    )
    assert result.is_error
    assert "2: def compute_total(items):" in result.content


async def test_no_change_and_overlap(root: Path, tools: list[Tool]) -> None:
    (root / "a.py").write_text("abc\n")
    same = await call(tools, "edit", {"path": "a.py", "oldText": "abc", "newText": "abc"})
    assert same.is_error and "No change" in same.content
    edits = [{"oldText": "ab", "newText": "x"}, {"oldText": "bc", "newText": "y"}]
    overlap = await call(tools, "edit", {"path": "a.py", "edits": edits})
    assert overlap.is_error and "overlap" in overlap.content


async def test_missing_pair_half_and_no_edits(root: Path, tools: list[Tool]) -> None:
    (root / "a.py").write_text("abc\n")
    half = await call(tools, "edit", {"path": "a.py", "oldText": "abc"})
    none = await call(tools, "edit", {"path": "a.py"})
    assert half.is_error and "newText is missing" in half.content
    assert none.is_error and "No edits given" in none.content


async def test_open_document_goes_through_apply_edit(
    root: Path, docs: MemoryDocuments, tools: list[Tool]
) -> None:
    (root / "a.py").write_text("disk = 1\n")
    docs.open(root / "a.py", "buffer = 1\n")
    result = await call(tools, "edit", {"path": "a.py", "oldText": "= 1", "newText": "= 2"})
    assert not result.is_error, result.content
    assert docs.texts[root / "a.py"] == "buffer = 2\n"
    assert (root / "a.py").read_text() == "buffer = 2\n"  # the editor saved it
    assert "in the editor and on disk" in result.content


async def test_editor_refusal_is_reported(root: Path, docs: MemoryDocuments) -> None:
    (root / "a.py").write_text("v = 1\n")
    docs.open(root / "a.py", "v = 1\n")

    async def refuse(path: Path, old: str, new: str) -> str | None:
        raise EditRefused("document is read-only")

    tools = standard_tools(ToolContext(root, documents=docs, apply_edit=refuse))
    result = await call(tools, "edit", {"path": "a.py", "oldText": "1", "newText": "2"})
    assert result.is_error
    assert "The editor refused the change to a.py: document is read-only" in result.content
    assert docs.texts[root / "a.py"] == "v = 1\n"


async def test_rejection_leaves_file_alone(root: Path, docs: MemoryDocuments) -> None:
    (root / "a.py").write_text("v = 1\n")
    approvals = Approvals(Decision.reject("not that file"))
    tools = standard_tools(ToolContext(root, approve=approvals))
    result = await call(tools, "edit", {"path": "a.py", "oldText": "1", "newText": "2"})
    assert result.is_error
    assert "The user declined the edit to a.py. Their reason: not that file" in result.content
    assert (root / "a.py").read_text() == "v = 1\n"
    (request,) = approvals.requests
    assert request["toolName"] == "edit"
    assert request["preview"] == {
        "kind": "diff",
        "path": str(root / "a.py"),
        "oldText": "v = 1\n",
        "newText": "v = 2\n",
    }


async def test_change_while_waiting_for_approval_is_caught(root: Path) -> None:
    target = root / "a.py"
    target.write_text("v = 1\n")

    async def slow_user(request: object) -> Decision:
        target.write_text("v = 100\n")
        return Decision.allow()

    tools = standard_tools(ToolContext(root, approve=slow_user))
    result = await call(tools, "edit", {"path": "a.py", "oldText": "v = 1", "newText": "v = 2"})
    assert result.is_error and "changed on disk while waiting" in result.content
    assert target.read_text() == "v = 100\n"
