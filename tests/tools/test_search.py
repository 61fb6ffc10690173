"""grep, find and ls over a real tree. grep runs on both engines: the pure-Python
fallback always, ripgrep only where ``rg`` is installed."""

from __future__ import annotations

from pathlib import Path

import pytest

from crank.agent.tools import Tool
from crank.tools import MemoryDocuments, ToolContext
from crank.tools.grep import make_grep
from crank.tools.listing import make_find, make_ls

from .conftest import call

ENGINES = [
    "python",
    pytest.param(
        "rg",
        marks=pytest.mark.requires("rg"),  # skipped without it; failed without it in CI
    ),
]


@pytest.fixture
def tree(root: Path) -> Path:
    files = {
        ".gitignore": "*.log\nbuild/\n!keep.log\n",
        "src/app.py": "import os\n\ndef main():\n    print('TODO: ship')\n",
        "src/util.py": "def helper():\n    return 'todo later'\n",
        "src/sub/.gitignore": "generated.py\n",
        "src/sub/generated.py": "TODO generated\n",
        "src/sub/real.py": "# TODO real\n",
        "notes.md": "TODO in markdown\n",
        "debug.log": "TODO in a log\n",
        "keep.log": "TODO kept log\n",
        "build/out.py": "TODO built\n",
        "node_modules/pkg/index.js": "TODO vendored\n",
        ".git/config": "TODO git\n",
        ".github/ci.yml": "TODO ci\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "data.bin").write_bytes(b"TODO\x00binary")
    return root


def grep_tool(ctx: ToolContext, engine: str) -> list[Tool]:
    return [make_grep(ctx, engine=engine)]


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_respects_ignores(tree: Path, ctx: ToolContext, engine: str) -> None:
    result = await call(grep_tool(ctx, engine), "grep", {"pattern": "TODO"})
    assert not result.is_error, result.content
    files = [line.split(":")[0] for line in result.content.splitlines()]
    assert files == [".github/ci.yml", "keep.log", "notes.md", "src/app.py", "src/sub/real.py"]
    assert "src/app.py:4:     print('TODO: ship')" in result.content


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_options(tree: Path, ctx: ToolContext, engine: str) -> None:
    tools = grep_tool(ctx, engine)
    folded = await call(tools, "grep", {"pattern": "todo", "ignoreCase": True, "glob": "*.py"})
    assert [line.split(":")[0] for line in folded.content.splitlines()] == [
        "src/app.py",
        "src/sub/real.py",
        "src/util.py",
    ]
    literal = await call(tools, "grep", {"pattern": "main()", "literal": True, "path": "src"})
    assert literal.content == "src/app.py:3: def main():"
    context = await call(tools, "grep", {"pattern": "def main", "context": 1})
    assert context.content.splitlines() == [
        "src/app.py-2- ",
        "src/app.py:3: def main():",
        "src/app.py-4-     print('TODO: ship')",
    ]
    limited = await call(tools, "grep", {"pattern": "TODO", "limit": 2})
    assert len([ln for ln in limited.content.splitlines() if ":" in ln]) == 2
    assert "Showing the first 2 matches" in limited.content
    nothing = await call(tools, "grep", {"pattern": "absent-word"})
    assert not nothing.is_error and nothing.content.startswith("No matches")


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_sees_open_buffers(
    tree: Path, ctx: ToolContext, docs: MemoryDocuments, engine: str
) -> None:
    docs.open(tree / "notes.md", "nothing here\nFIXME unsaved\n")
    result = await call(grep_tool(ctx, engine), "grep", {"pattern": "TODO|FIXME"})
    assert "notes.md:2: FIXME unsaved" in result.content
    assert "TODO in markdown" not in result.content


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_bad_regex(tree: Path, ctx: ToolContext, engine: str) -> None:
    result = await call(grep_tool(ctx, engine), "grep", {"pattern": "("})
    assert result.is_error and "Invalid regular expression" in result.content


async def test_find_globs(tree: Path, ctx: ToolContext) -> None:
    tools = [make_find(ctx)]
    names = await call(tools, "find", {"pattern": "*.py"})
    assert names.content.splitlines() == ["src/app.py", "src/sub/real.py", "src/util.py"]
    pathy = await call(tools, "find", {"pattern": "sub/**/*.py", "path": "src"})
    assert pathy.content.splitlines() == ["src/sub/real.py"]
    braces = await call(tools, "find", {"pattern": "*.{md,yml}"})
    assert braces.content.splitlines() == [".github/ci.yml", "notes.md"]
    none = await call(tools, "find", {"pattern": "*.rs"})
    assert none.content.startswith("No files match")


async def test_find_limit(root: Path, ctx: ToolContext) -> None:
    for n in range(5):
        (root / f"f{n}.txt").write_text("")
    result = await call([make_find(ctx)], "find", {"pattern": "*.txt", "limit": 3})
    assert result.content.splitlines()[:3] == ["f0.txt", "f1.txt", "f2.txt"]
    assert "Showing the first 3 matches" in result.content


async def test_ls(tree: Path, ctx: ToolContext) -> None:
    (tree / "link").symlink_to(tree / "notes.md")
    tools = [make_ls(ctx)]
    result = await call(tools, "ls", {})
    assert result.content.splitlines() == [
        ".git/",
        ".github/",
        ".gitignore",
        "build/",
        "data.bin",
        "debug.log",
        "keep.log",
        "link@",
        "node_modules/",
        "notes.md",
        "src/",
    ]
    limited = await call(tools, "ls", {"path": "src", "limit": 1})
    assert limited.content.startswith("app.py\n\n[Showing 1 of 3 entries")
    missing = await call(tools, "ls", {"path": "nowhere"})
    assert missing.is_error and "Directory not found: nowhere" in missing.content


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_and_find_do_not_follow_a_file_link_out_of_the_workspace(
    root: Path, ctx: ToolContext, engine: str
) -> None:
    secret = root.parent / "secret.txt"
    secret.write_text("TODO the key is hunter2\n")
    (root / "inside.txt").write_text("TODO inside\n")
    (root / "leak.txt").symlink_to(secret)
    result = await call(grep_tool(ctx, engine), "grep", {"pattern": "TODO"})
    assert "hunter2" not in result.content
    assert result.content.splitlines() == ["inside.txt:1: TODO inside"]
    found = await call([make_find(ctx)], "find", {"pattern": "*.txt"})
    assert found.content.splitlines() == ["inside.txt"]
