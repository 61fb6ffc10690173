"""File names that are not UTF-8 (issue 26 item 1, the tools' side): ls, find and grep
show ``bad\\xffname.txt`` escaped as ripgrep and ``ls -b`` do (never a lone surrogate,
which no UTF-8 encoder takes), and the escaped form sent back reaches the real file in
read, edit and write, unless a file of that very name exists too (then: refused)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from crank.agent.tools import Tool
from crank.tools import ToolContext
from crank.tools.names import shown, unescaped

from .conftest import call

SHOWN = "bad\\xffname.txt"
"""What the model sees (and may send back): a backslash, an x, two hex digits."""


@pytest.fixture
def odd(root: Path) -> Path:
    path = Path(os.fsdecode(bytes(root) + b"/bad\xffname.txt"))
    path.write_bytes(b"hello TODO\n")
    return path


def encodable(text: str) -> str:
    text.encode("utf-8")  # raises on a lone surrogate
    return text


def test_the_escape_and_its_inverse() -> None:
    name = os.fsdecode(b"bad\xffname\n.txt")
    assert shown(name) == "bad\\xffname\\x0a.txt"
    assert unescaped(shown(name)) == name
    assert shown("plain/caf\u00e9.py") == "plain/caf\u00e9.py"


async def test_ls_shows_the_name_escaped(odd: Path, tools: list[Tool]) -> None:
    result = await call(tools, "ls", {})
    assert not result.is_error and encodable(result.content).splitlines() == [SHOWN]


async def test_find_shows_the_name_escaped(odd: Path, tools: list[Tool]) -> None:
    result = await call(tools, "find", {"pattern": "*.txt"})
    assert not result.is_error and encodable(result.content) == SHOWN


@pytest.mark.parametrize("pattern", ["*", "**/*", "**", "bad*"])
async def test_find_wildcards_match_the_name_too(
    odd: Path, tools: list[Tool], pattern: str
) -> None:
    """RE2 matches no byte that is not UTF-8, so ``*`` (a glob RE2 runs, unlike the
    ``*.txt`` suffix) skipped the name until it was matched in its shown form."""
    result = await call(tools, "find", {"pattern": pattern})
    assert not result.is_error and encodable(result.content) == SHOWN


@pytest.mark.parametrize("engine", ["python", "rg"])
async def test_grep_shows_the_name_escaped(odd: Path, ctx: ToolContext, engine: str) -> None:
    from crank.tools.grep import make_grep

    result = await call([make_grep(ctx, engine=engine)], "grep", {"pattern": "TODO"})
    assert not result.is_error and encodable(result.content) == f"{SHOWN}:1: hello TODO"


async def test_read_edit_write_reach_the_file_by_its_escaped_name(
    odd: Path, tools: list[Tool]
) -> None:
    read = await call(tools, "read", {"path": SHOWN})
    assert not read.is_error and read.content == "hello TODO"
    edited = await call(tools, "edit", {"path": SHOWN, "oldText": "TODO", "newText": "DONE"})
    assert not edited.is_error, edited.content
    assert SHOWN in encodable(edited.content)
    assert await anyio.Path(odd).read_bytes() == b"hello DONE\n"
    written = await call(tools, "write", {"path": SHOWN, "content": "new\n"})
    assert not written.is_error, written.content
    assert await anyio.Path(odd).read_bytes() == b"new\n"
    assert sorted(os.listdir(odd.parent)) == [odd.name]  # no second file was made


async def test_an_escaped_name_that_could_be_either_file_is_refused(
    root: Path, odd: Path, tools: list[Tool]
) -> None:
    (root / SHOWN).write_text("the literal one\n")
    result = await call(tools, "read", {"path": SHOWN})
    assert result.is_error and "ambiguous" in result.content
    listed = await call(tools, "ls", {})
    assert sorted(encodable(listed.content).splitlines()) == [SHOWN, SHOWN]
