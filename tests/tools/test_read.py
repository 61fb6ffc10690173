from __future__ import annotations

import asyncio
import os
from pathlib import Path

from crank.agent.tools import Tool, ToolCall
from crank.tools import MemoryDocuments, ToolContext, read_only_tools

from .conftest import call


async def test_reads_lines_as_written(root: Path, tools: list[Tool]) -> None:
    (root / "a.txt").write_text("one\ntwo\nthree\n")
    result = await call(tools, "read", {"path": "a.txt"})
    assert not result.is_error
    assert result.content == "one\ntwo\nthree"


async def test_offset_and_limit_say_how_to_go_on(root: Path, tools: list[Tool]) -> None:
    (root / "a.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    result = await call(tools, "read", {"path": "a.txt", "offset": 3, "limit": 2})
    assert result.content.startswith("line 3\nline 4\n")
    assert "Showing lines 3-4 of 10. Use offset=5 to continue." in result.content


async def test_large_file_is_cut_with_next_offset(root: Path, tools: list[Tool]) -> None:
    (root / "big.txt").write_text("".join(f"row {n}\n" for n in range(1, 5001)))
    result = await call(tools, "read", {"path": "big.txt"})
    last_note = result.content.rsplit("\n", 1)[-1]
    assert last_note.startswith("[Showing lines 1-")
    shown = int(last_note.split("-")[1].split(" ")[0])
    assert shown < 2000
    assert f"Use offset={shown + 1} to continue." in last_note
    nxt = await call(tools, "read", {"path": "big.txt", "offset": shown + 1, "limit": 1})
    assert nxt.content.startswith(f"row {shown + 1}\n")


async def test_very_long_line_is_cut_and_named(root: Path, tools: list[Tool]) -> None:
    (root / "min.js").write_text("x" * 200_000 + "\nnext\n")
    result = await call(tools, "read", {"path": "min.js"})
    assert "Line 1 of min.js is longer than 50 KB" in result.content
    assert "offset=2" in result.content
    assert len(result.content.encode()) < 51 * 1024


async def test_offset_past_end_is_an_error(root: Path, tools: list[Tool]) -> None:
    (root / "a.txt").write_text("one\n")
    result = await call(tools, "read", {"path": "a.txt", "offset": 5})
    assert result.is_error
    assert "past the end" in result.content and "1 lines" in result.content


async def test_binary_and_images_refused(root: Path, tools: list[Tool]) -> None:
    (root / "blob.bin").write_bytes(b"\x7fELF\x00\x01\x02")
    (root / "pic.png").write_bytes(b"\x89PNG\r\n")
    binary = await call(tools, "read", {"path": "blob.bin"})
    image = await call(tools, "read", {"path": "pic.png"})
    assert binary.is_error and "binary" in binary.content and "blob.bin" in binary.content
    assert image.is_error and "image" in image.content


async def test_missing_file_and_directory(root: Path, tools: list[Tool]) -> None:
    (root / "sub").mkdir()
    missing = await call(tools, "read", {"path": "nope.txt"})
    folder = await call(tools, "read", {"path": "sub"})
    assert missing.is_error and "File not found: nope.txt" in missing.content
    assert folder.is_error and "directory" in folder.content


async def test_open_document_is_read_from_the_buffer(
    root: Path, docs: MemoryDocuments, tools: list[Tool]
) -> None:
    (root / "a.py").write_text("on disk\n")
    docs.open(root / "a.py", "unsaved buffer\n")
    result = await call(tools, "read", {"path": "a.py"})
    assert result.content.startswith("unsaved buffer\n\n[a.py is open in the editor")
    assert result.details == {"path": str(root / "a.py"), "openInEditor": True, "unsaved": True}


async def test_escape_via_dotdot_is_refused(root: Path, tools: list[Tool]) -> None:
    (root.parent / "secret.txt").write_text("key\n")
    result = await call(tools, "read", {"path": "../secret.txt"})
    assert result.is_error
    assert "outside the workspace" in result.content
    assert str(root.parent / "secret.txt") in result.content


async def test_escape_via_symlink_is_refused(root: Path, tools: list[Tool]) -> None:
    (root.parent / "secret.txt").write_text("key\n")
    os.symlink(root.parent / "secret.txt", root / "link.txt")
    result = await call(tools, "read", {"path": "link.txt"})
    assert result.is_error and "outside the workspace" in result.content


async def test_outside_hook_can_allow(root: Path, tmp_path: Path) -> None:
    (root.parent / "shared.txt").write_text("shared\n")
    asked: list[Path] = []

    async def outside(path: Path, call: ToolCall) -> bool:
        asked.append(path)
        return True

    tools = read_only_tools(ToolContext(root, outside=outside))
    result = await call(tools, "read", {"path": "../shared.txt"})
    assert result.content == "shared"
    assert asked == [(root.parent / "shared.txt").resolve()]


async def test_a_named_pipe_is_refused_not_waited_on(root: Path, tools: list[Tool]) -> None:
    os.mkfifo(root / "pipe")
    # Reading a FIFO with no writer blocks for ever in a thread no abort can stop; the
    # wait_for only turns that hang into a failure, it times nothing.
    for name in ("read", "edit"):
        args = (
            {"path": "pipe"} if name == "read" else {"path": "pipe", "oldText": "a", "newText": "b"}
        )
        result = await asyncio.wait_for(call(tools, name, args), 10)
        assert result.is_error
        assert "pipe is not a regular file" in result.content


async def test_a_directory_is_named_as_one(root: Path, tools: list[Tool]) -> None:
    (root / "sub").mkdir()
    result = await call(tools, "read", {"path": "sub"})
    assert result.is_error and "sub is a directory, not a file; use ls" in result.content
