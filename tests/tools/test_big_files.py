"""Hostile and huge files: every file tool stays bounded, and refuses what it cannot do
with a message that names the size and what to do instead (issue 12, item 5).

Big files here are sparse (a 300 MB file costs no disk) or a few MB of real bytes. The
memory tests run the real tool in a fresh process (tests/support/tool_probe.py) and
assert its peak resident memory stays under a generous bound: a property, not a speed.
On the old code, each of them loaded the whole 300 MB (and more) and failed the bound.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from crank.agent.tools import MAX_LINES, NOTE_ROOM_LINES, Tool
from crank.tools import Decision, MemoryDocuments, ToolContext, standard_tools
from crank.tools import walk as walk_module
from crank.tools.grep import make_grep
from crank.tools.search import ripgrep
from crank.tools.textfile import MAX_TEXT_BYTES

from .conftest import Approvals, call

PROBE = Path(__file__).resolve().parents[1] / "support" / "tool_probe.py"
BIG = 300 * 1024 * 1024
PEAK_BOUND_KB = 150 * 1024
ENGINES = [
    "python",
    pytest.param(
        "rg",
        marks=pytest.mark.requires("rg"),  # skipped without it; failed without it in CI
    ),
]
HEAD = "".join(f"line {n}\n" for n in range(1, 1001))
"""The text start of mixed.txt: 1000 short lines, then 300 MB of NULs with no newline."""


def sparse(path: Path, size: int = BIG) -> Path:
    with open(path, "wb") as handle:
        handle.truncate(size)
    return path


def mixed(path: Path) -> Path:
    """Text lines, then a sparse tail: one giant line of NULs past the 8 KB sniff."""
    path.write_text(HEAD)
    with open(path, "r+b") as handle:
        handle.truncate(BIG)
    return path


def probe(root: Path, tool: str, args: dict[str, Any], engine: str | None = None) -> Any:
    """The tool's result and peak memory, from a process of its own. The timeout only
    turns a hang into a failure; nothing is timed."""
    command = [sys.executable, str(PROBE), str(root), tool, json.dumps(args), engine or ""]
    out = subprocess.run(command, capture_output=True, text=True, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---- memory: a fresh process per call, peak RSS under the bound -------------------------


@pytest.fixture
def hostile(root: Path) -> Path:
    sparse(root / "sparse.bin")
    mixed(root / "mixed.txt")
    sparse(root / ".gitignore")
    (root / "note.txt").write_text("a needle in a small file\n")
    (root / "blob.bin").write_bytes(b"needle\x00" * 1000)
    return root


MEMORY_CASES: list[tuple[str, dict[str, Any], bool, str]] = [
    ("read", {"path": "sparse.bin"}, True, "sparse.bin looks like a binary file"),
    ("read", {"path": "mixed.txt"}, False, "too large to count its lines"),
    ("read", {"path": "mixed.txt", "offset": 5000}, True, "which has 1001 lines"),
    ("read", {"path": "mixed.txt", "offset": 1001}, True, f"a NUL byte at byte {len(HEAD)}"),
    ("edit", {"path": "sparse.bin", "oldText": "a", "newText": "b"}, True, "300.0 MB"),
    ("edit", {"path": "mixed.txt", "oldText": "line 1\n", "newText": "x"}, True, "300.0 MB"),
    ("write", {"path": "sparse.bin", "content": "small\n"}, False, "it was not loaded"),
    ("find", {"pattern": "*.txt"}, False, "mixed.txt"),
    ("ls", {}, False, "sparse.bin"),
]


@pytest.mark.parametrize(("tool", "args", "is_error", "says"), MEMORY_CASES)
def test_peak_memory_stays_bounded(
    hostile: Path, tool: str, args: dict[str, Any], is_error: bool, says: str
) -> None:
    result = probe(hostile, tool, args)
    assert result["isError"] is is_error, result["content"]
    assert says in result["content"]
    assert len(result["content"].encode()) <= 51 * 1024
    assert result["hwm"] < PEAK_BOUND_KB, f"peak {result['hwm']} kB"


@pytest.mark.parametrize("engine", ENGINES)
def test_grep_memory_stays_bounded_and_skips_binary(hostile: Path, engine: str) -> None:
    result = probe(hostile, "grep", {"pattern": "needle"}, engine)
    assert not result["isError"], result["content"]
    hits, _, note = result["content"].partition("\n\n")
    assert hits == "note.txt:1: a needle in a small file"
    if engine == "rg":  # the 300 MB .gitignore takes ripgrep past its memory allowance
        assert note.startswith("[ripgrep failed (memory allocation of")
    assert result["hwm"] < PEAK_BOUND_KB, f"peak {result['hwm']} kB"


def test_write_over_a_huge_file_replaces_it_without_reading_it(hostile: Path) -> None:
    result = probe(hostile, "write", {"path": "sparse.bin", "content": "small\n"})
    assert "Overwrote sparse.bin (6 bytes, on disk)" in result["content"]
    assert "300.0 MB (314572800 bytes), over the 4.0 MB limit" in result["content"]
    assert "cannot be restored by undoing it" in result["content"]
    assert result["details"]["oldTextOmitted"] == BIG
    assert result["details"]["oldText"] == "" and result["details"]["diff"] == ""
    assert (hostile / "sparse.bin").read_bytes() == b"small\n"


# ---- refusals and markers, in process ---------------------------------------------------


async def test_edit_over_the_limit_names_the_size_and_what_to_do(
    root: Path, tools: list[Tool]
) -> None:
    sparse(root / "big.txt", MAX_TEXT_BYTES + 1)
    result = await call(tools, "edit", {"path": "big.txt", "oldText": "a", "newText": "b"})
    assert result.is_error
    assert f"big.txt is 4.0 MB ({MAX_TEXT_BYTES + 1} bytes), over the 4.0 MB limit" in (
        result.content
    )
    assert "Change it with bash instead" in result.content


async def test_edit_at_the_limit_still_works(root: Path, tools: list[Tool]) -> None:
    line = "value = compute(alpha, beta)\n"
    body = line * (MAX_TEXT_BYTES // len(line) - 1) + "last = 1\n"
    (root / "big.py").write_text(body)
    result = await call(tools, "edit", {"path": "big.py", "oldText": "last = 1", "newText": "2"})
    assert not result.is_error, result.content
    assert (root / "big.py").read_text().endswith(line + "2\n")


async def test_binary_files_are_refused_without_their_bytes(root: Path, tools: list[Tool]) -> None:
    (root / "blob.dat").write_bytes(b"SECRETBYTES\x00\x01\x02" * 100)
    for name, args in [
        ("read", {"path": "blob.dat"}),
        ("edit", {"path": "blob.dat", "oldText": "SECRET", "newText": "x"}),
    ]:
        result = await call(tools, name, args)
        assert result.is_error
        assert "blob.dat looks like a binary file (a NUL byte in its first 8 KB" in result.content
        assert "1400 bytes" in result.content
        assert "SECRETBYTES" not in result.content


async def test_a_giant_line_is_cut_with_a_marker(root: Path, tools: list[Tool]) -> None:
    (root / "min.js").write_bytes(b"x" * (6 * 1024 * 1024) + b"needle")
    result = await call(tools, "read", {"path": "min.js"})
    assert "[Line 1 of min.js is longer than 50 KB and was cut. Use offset=2" in result.content
    assert len(result.content.encode()) < 51 * 1024
    past = await call(tools, "read", {"path": "min.js", "offset": 2})
    assert past.is_error and "offset 2 is past the end of min.js, which has 1 lines" in (
        past.content
    )


async def test_a_cut_line_ends_on_a_whole_character(root: Path, tools: list[Tool]) -> None:
    (root / "wide.txt").write_text("é" * 100_000 + "\n")
    result = await call(tools, "read", {"path": "wide.txt"})
    shown = result.content.split("\n\n[", 1)[0]
    assert set(shown) == {"é"} and len(shown.encode()) <= 50 * 1024


async def test_read_streams_to_an_offset_deep_in_a_file(root: Path, tools: list[Tool]) -> None:
    (root / "log.txt").write_text("".join(f"row {n}\n" for n in range(1, 300_001)))
    result = await call(tools, "read", {"path": "log.txt", "offset": 299_999, "limit": 5})
    assert result.content == "row 299999\nrow 300000"
    middle = await call(tools, "read", {"path": "log.txt", "offset": 150_000, "limit": 2})
    assert middle.content.startswith("row 150000\nrow 150001\n\n[Showing lines 150000-150001")
    assert "of 300000. Use offset=150002" in middle.content


async def test_crlf_bom_and_a_final_line_without_newline(root: Path, tools: list[Tool]) -> None:
    (root / "w.txt").write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\nthree")
    result = await call(tools, "read", {"path": "w.txt"})
    assert result.content == "one\ntwo\nthree"
    tail = await call(tools, "read", {"path": "w.txt", "offset": 3})
    assert tail.content == "three"


async def test_invalid_utf8_in_the_window_is_refused(root: Path, tools: list[Tool]) -> None:
    (root / "latin.txt").write_bytes(b"fine\ncaf\xe9\n")
    result = await call(tools, "read", {"path": "latin.txt"})
    assert result.is_error and "latin.txt is not valid UTF-8 (byte 8)" in result.content


async def test_write_over_a_small_binary_file_says_there_is_no_diff(
    root: Path, ctx: ToolContext, approvals: Approvals
) -> None:
    (root / "icon.dat").write_bytes(b"\x00\x01" * 10)
    tools = standard_tools(ctx)
    result = await call(tools, "write", {"path": "icon.dat", "content": "text now\n"})
    assert not result.is_error, result.content
    assert "The old file was 20 bytes, not UTF-8 text, so it was not loaded" in result.content
    preview = approvals.requests[-1]["preview"]
    assert preview["kind"] == "diff" and preview.get("oldTextOmitted") == 20
    assert preview["oldText"] == ""
    assert (root / "icon.dat").read_text() == "text now\n"


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_of_a_binary_file_says_it_skips_it(
    root: Path, ctx: ToolContext, engine: str
) -> None:
    sparse(root / "disk.img")
    result = await call(
        [make_grep(ctx, engine=engine)], "grep", {"pattern": "x", "path": "disk.img"}
    )
    assert not result.is_error
    assert "disk.img looks like a binary file" in result.content
    assert "grep skips binary files" in result.content


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_bounds_each_reported_line(root: Path, ctx: ToolContext, engine: str) -> None:
    (root / "min.js").write_bytes(b"needle" + b"x" * (3 * 1024 * 1024) + b"\nshort needle\n")
    result = await call([make_grep(ctx, engine=engine)], "grep", {"pattern": "needle"})
    first, second = result.content.split("\n")[:2]
    assert first.startswith("min.js:1: needlexxx") and first.endswith("…")
    assert len(first) <= len("min.js:1: ") + 501
    assert second == "min.js:2: short needle"


async def test_python_grep_says_a_giant_line_was_searched_in_part(
    root: Path, ctx: ToolContext
) -> None:
    (root / "min.js").write_bytes(b"x" * (3 * 1024 * 1024) + b"needle\n")
    result = await call([make_grep(ctx, engine="python")], "grep", {"pattern": "needle"})
    assert "No matches" in result.content
    assert "min.js: a line longer than 1 MB was searched in its first MB only" in result.content


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_stops_at_what_could_be_shown(root: Path, ctx: ToolContext, engine: str) -> None:
    (root / "many.txt").write_text("hit\n" * 50_000)
    grep = [make_grep(ctx, engine=engine)]
    result = await call(grep, "grep", {"pattern": "hit", "limit": 10_000_000})
    lines = result.content.split("\n")
    assert len(lines) <= MAX_LINES
    shown = MAX_LINES - NOTE_ROOM_LINES
    assert lines[-1] == f"[Showing the first {shown} matches. Narrow the pattern, path or glob.]"


async def test_ls_keeps_only_what_it_shows(root: Path, tools: list[Tool]) -> None:
    folder = root / "many"
    folder.mkdir()
    for n in reversed(range(3000)):
        (folder / f"f{n:05d}").touch()
    result = await call(tools, "ls", {"path": "many"})
    lines = result.content.split("\n")
    assert lines[:2] == ["f00000", "f00001"] and lines[499] == "f00499"
    assert lines[-1] == "[Showing 500 of 3000 entries. Raise limit to see more.]"
    huge = await call(tools, "ls", {"path": "many", "limit": 10**9})
    assert huge.content.endswith(
        f"[Showing {MAX_LINES - NOTE_ROOM_LINES} of 3000 entries. Use find or bash to see more.]"
    )


async def test_find_and_grep_name_a_directory_too_large_to_walk(
    root: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(walk_module, "DIR_ENTRIES", 50)
    folder = root / "crowd"
    folder.mkdir()
    for n in range(60):
        (folder / f"f{n}.txt").write_text("needle\n")
    found = await call(standard_tools(ctx), "find", {"pattern": "*.txt"})
    assert len(found.content.split("\n\n")[0].split("\n")) == 50
    assert "[crowd: more than 50 entries; only the first 50" in found.content
    grep = await call([make_grep(ctx, engine="python")], "grep", {"pattern": "needle"})
    assert grep.content.count("needle") == 50
    assert "[crowd: more than 50 entries; only the first 50" in grep.content


# ---- FIFOs, sockets and devices: refused or skipped, never waited on ---------------------
# The wait_for calls only turn a hang into a failure; they time nothing.


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_refuses_a_fifo_and_skips_one_in_a_tree(
    root: Path, ctx: ToolContext, engine: str
) -> None:
    os.mkfifo(root / "pipe")
    (root / "a.txt").write_text("needle\n")
    grep = [make_grep(ctx, engine=engine)]
    named = await asyncio.wait_for(call(grep, "grep", {"pattern": "x", "path": "pipe"}), 30)
    assert named.is_error and "pipe is not a regular file" in named.content
    tree = await asyncio.wait_for(call(grep, "grep", {"pattern": "needle"}), 30)
    assert tree.content == "a.txt:1: needle"


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_fifo_gitignore_does_not_hang_grep_or_find(
    root: Path, ctx: ToolContext, engine: str
) -> None:
    os.mkfifo(root / ".gitignore")
    (root / "a.txt").write_text("needle\n")
    grep = await asyncio.wait_for(
        call([make_grep(ctx, engine=engine)], "grep", {"pattern": "needle"}), 60
    )
    assert grep.content.startswith("a.txt:1: needle")
    if engine == "rg":
        assert "ripgrep failed (it did no I/O for" in grep.content
    found = await asyncio.wait_for(call(standard_tools(ctx), "find", {"pattern": "*.txt"}), 30)
    assert found.content == "a.txt"


async def test_write_and_ls_leave_a_fifo_alone(root: Path, tools: list[Tool]) -> None:
    os.mkfifo(root / "pipe")
    written = await asyncio.wait_for(call(tools, "write", {"path": "pipe", "content": "x"}), 10)
    assert written.is_error and "pipe is not a regular file" in written.content
    listed = await asyncio.wait_for(call(tools, "ls", {}), 10)
    assert listed.content == "pipe"


async def test_a_fifo_swapped_in_while_the_user_decides_is_not_waited_on(root: Path) -> None:
    target = root / "a.py"
    target.write_text("v = 1\n")

    async def slow_user(request: object) -> Decision:
        target.unlink()
        os.mkfifo(target)
        return Decision.allow()

    tools = standard_tools(ToolContext(root, approve=slow_user))
    args = {"path": "a.py", "oldText": "v = 1", "newText": "v = 2"}
    result = await asyncio.wait_for(call(tools, "edit", args), 10)
    assert result.is_error and "a.py is not a regular file" in result.content


# ---- the editor overlay: buffers are in memory already, and keep working ----------------


async def test_open_buffers_are_bounded_the_same_way(
    root: Path, docs: MemoryDocuments, ctx: ToolContext
) -> None:
    tools = standard_tools(ctx)
    (root / "huge.py").write_text("small on disk\n")
    docs.open(root / "huge.py", "y" * (MAX_TEXT_BYTES + 10))
    edit = await call(tools, "edit", {"path": "huge.py", "oldText": "y", "newText": "z"})
    assert edit.is_error
    assert "huge.py (open in the editor) is 4.0 MB" in edit.content
    read = await call(tools, "read", {"path": "huge.py"})
    assert "[Line 1 of huge.py is longer than 50 KB and was cut" in read.content
    assert read.details == {"path": str(root / "huge.py"), "openInEditor": True, "unsaved": True}
    docs.open(root / "huge.py", "first\n" + "needle " * 10_000 + "\n")
    for engine in ("python", "rg"):
        if engine == "rg" and ripgrep() is None:
            continue
        grep = await call([make_grep(ctx, engine=engine)], "grep", {"pattern": "needle"})
        first = grep.content.splitlines()[0]
        assert first.startswith("huge.py:2: needle needle") and first.endswith("…")
        assert "[Searched the editor's text of huge.py, which differs" in grep.content


async def test_sockets_and_devices_are_refused_by_every_file_tool(root: Path) -> None:
    import socket

    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(root / "sock"))
    try:

        async def anywhere(path: Path, call: object) -> bool:
            return True

        ctx = ToolContext(root, outside=anywhere)
        tools = [*standard_tools(ctx), make_grep(ctx, engine="python")]
        for target in ("sock", "/dev/zero", "/dev/null"):
            for name, args in [
                ("read", {"path": target}),
                ("edit", {"path": target, "oldText": "a", "newText": "b"}),
                ("write", {"path": target, "content": "x"}),
            ]:
                result = await asyncio.wait_for(call(tools, name, args), 10)
                assert result.is_error and "is not a regular file" in result.content, (
                    name,
                    target,
                    result.content,
                )
            for grep in (tools[-1], *(t for t in tools[:-1] if t.name == "grep")):
                found = await asyncio.wait_for(
                    call([grep], "grep", {"pattern": "x", "path": target}), 10
                )
                assert found.is_error and "is not a regular file" in found.content
        listed = await call(tools, "find", {"pattern": "*"})
        assert "sock" not in listed.content
    finally:
        listener.close()


async def test_an_open_buffer_over_a_fifo_on_disk_is_read_without_waiting(
    root: Path, docs: MemoryDocuments, tools: list[Tool]
) -> None:
    # read and grep compare an open buffer with the disk; a FIFO put where the file was
    # used to block that comparison for ever.
    docs.open(root / "pipe", "buffer text\n")
    os.mkfifo(root / "pipe")
    result = await asyncio.wait_for(call(tools, "read", {"path": "pipe"}), 10)
    assert result.content.startswith("buffer text")
    found = await asyncio.wait_for(call(tools, "grep", {"pattern": "buffer"}), 30)
    assert found.content.startswith("pipe:1: buffer text")
