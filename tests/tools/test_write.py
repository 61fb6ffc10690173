from __future__ import annotations

import os
from pathlib import Path

import pytest

from crank.agent.tools import Tool
from crank.tools import Decision, MemoryDocuments, ToolContext, standard_tools

from .conftest import Approvals, call


async def test_creates_parents_and_leaves_no_temp_files(root: Path, tools: list[Tool]) -> None:
    result = await call(tools, "write", {"path": "deep/er/new.txt", "content": "hi\n"})
    assert not result.is_error, result.content
    assert (root / "deep/er/new.txt").read_text() == "hi\n"
    assert sorted(p.name for p in (root / "deep/er").iterdir()) == ["new.txt"]
    assert "Created deep/er/new.txt" in result.content


async def test_overwrite_keeps_crlf_bom_and_mode(root: Path, tools: list[Tool]) -> None:
    target = root / "run.sh"
    target.write_bytes(b"\xef\xbb\xbfold\r\n")
    target.chmod(0o755)
    result = await call(tools, "write", {"path": "run.sh", "content": "a\nb\n"})
    assert not result.is_error, result.content
    assert target.read_bytes() == b"\xef\xbb\xbfa\r\nb\r\n"
    assert target.stat().st_mode & 0o777 == 0o755
    assert result.details is not None and result.details["oldText"] == "old\n"


async def test_new_file_content_is_written_as_given(root: Path, tools: list[Tool]) -> None:
    await call(tools, "write", {"path": "w.bat", "content": "echo\r\n"})
    assert (root / "w.bat").read_bytes() == b"echo\r\n"


async def test_open_document_written_through_editor(
    root: Path, docs: MemoryDocuments, tools: list[Tool]
) -> None:
    (root / "a.py").write_text("disk\n")
    docs.open(root / "a.py", "buffer\n")
    result = await call(tools, "write", {"path": "a.py", "content": "new\n"})
    assert not result.is_error, result.content
    assert docs.texts[root / "a.py"] == "new\n"
    assert (root / "a.py").read_text() == "new\n"  # the editor saved it
    assert "in the editor and on disk" in result.content


async def test_rejected_write_creates_nothing(root: Path) -> None:
    approvals = Approvals(Decision.reject())
    tools = standard_tools(ToolContext(root, approve=approvals))
    result = await call(tools, "write", {"path": "x.txt", "content": "x"})
    assert result.is_error and "The user declined writing x.txt." in result.content
    assert not (root / "x.txt").exists()
    assert approvals.requests[0]["preview"]["kind"] == "diff"


async def test_directory_and_escape_refused(root: Path, tools: list[Tool]) -> None:
    (root / "sub").mkdir()
    folder = await call(tools, "write", {"path": "sub", "content": "x"})
    escape = await call(tools, "write", {"path": "../evil.txt", "content": "x"})
    assert folder.is_error and "directory" in folder.content
    assert escape.is_error and "outside the workspace" in escape.content
    assert not (root.parent / "evil.txt").exists()


async def test_a_new_file_gets_the_umask_mode_without_touching_the_umask(
    root: Path, tools: list[Tool], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A spy, not a mock: os.umask still runs. The umask is one per process, so setting it
    # to 0 even for a moment gives a file another thread creates then mode 0o666.
    changes: list[int] = []
    real_umask = os.umask

    def spy(mask: int) -> int:
        changes.append(mask)
        return real_umask(mask)

    previous = real_umask(0o027)
    try:
        monkeypatch.setattr(os, "umask", spy)
        result = await call(tools, "write", {"path": "fresh.txt", "content": "x\n"})
    finally:
        real_umask(previous)
    assert not result.is_error, result.content
    assert changes == []
    assert (root / "fresh.txt").stat().st_mode & 0o777 == 0o640
