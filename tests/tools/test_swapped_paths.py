"""A path swapped for a link between the check and the open (issue 12's rule: tools stay
inside the workspace). A command the agent runs can run beside another tool call and
replace a folder of the workspace with a link to one outside it (``~/.ssh``) in the
moment after ``ToolContext.resolve`` checked the path. The swap is made here at that
exact moment, deterministically: ``resolve`` is wrapped to do it right after checking,
standing in for the concurrent command. The file outside must be neither read nor
written, and the tool must say what happened.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from crank.agent.tools import Tool, ToolCall
from crank.tools import ToolContext, standard_tools
from crank.tools.grep import make_grep
from crank.tools.listing import make_find, make_ls

from .conftest import call


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "elsewhere" / "dir"
    folder.mkdir(parents=True)
    (folder / "notes.txt").write_text("SECRET outside\n")
    return folder


@pytest.fixture
def swap_after_check(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Callable[[], None]]]:
    """Swaps to make right after the next ``resolve`` (then resolve is as it was)."""
    pending: list[Callable[[], None]] = []
    checked = ToolContext.resolve

    async def resolve(self: ToolContext, raw: str, tool_call: ToolCall) -> Path:
        path = await checked(self, raw, tool_call)
        while pending:
            pending.pop(0)()
        return path

    monkeypatch.setattr(ToolContext, "resolve", resolve)
    yield pending


def folder_becomes_link(root: Path, target: Path) -> Callable[[], None]:
    def swap() -> None:
        (root / "dir").rename(root / "dir.was")
        os.symlink(target, root / "dir")

    return swap


@pytest.fixture
def tools_here(ctx: ToolContext) -> list[Tool]:
    return standard_tools(ctx)


async def test_read_refuses_a_folder_swapped_for_a_link(
    root: Path, outside: Path, swap_after_check: list[Callable[[], None]], tools_here: list[Tool]
) -> None:
    (root / "dir").mkdir()
    (root / "dir" / "notes.txt").write_text("inside\n")
    swap_after_check.append(folder_becomes_link(root, outside))
    result = await call(tools_here, "read", {"path": "dir/notes.txt"})
    assert result.is_error and "changed while it was being opened" in result.content
    assert "SECRET" not in result.content


async def test_read_refuses_a_file_swapped_for_a_link(
    root: Path, outside: Path, swap_after_check: list[Callable[[], None]], tools_here: list[Tool]
) -> None:
    (root / "notes.txt").write_text("inside\n")

    def swap() -> None:
        (root / "notes.txt").unlink()
        os.symlink(outside / "notes.txt", root / "notes.txt")

    swap_after_check.append(swap)
    result = await call(tools_here, "read", {"path": "notes.txt"})
    assert result.is_error and "changed while it was being opened" in result.content
    assert "SECRET" not in result.content


async def test_write_into_a_folder_swapped_for_a_link_writes_nothing(
    root: Path, outside: Path, swap_after_check: list[Callable[[], None]], tools_here: list[Tool]
) -> None:
    (root / "dir").mkdir()
    swap_after_check.append(folder_becomes_link(root, outside))
    result = await call(tools_here, "write", {"path": "dir/new.txt", "content": "planted\n"})
    assert result.is_error and "changed while it was being opened" in result.content
    assert sorted(os.listdir(outside)) == ["notes.txt"]


async def test_edit_of_a_file_whose_folder_was_swapped_changes_nothing_outside(
    root: Path, outside: Path, swap_after_check: list[Callable[[], None]], tools_here: list[Tool]
) -> None:
    (root / "dir").mkdir()
    (root / "dir" / "notes.txt").write_text("SECRET inside\n")
    swap_after_check.append(folder_becomes_link(root, outside))
    result = await call(
        tools_here,
        "edit",
        {"path": "dir/notes.txt", "oldText": "SECRET", "newText": "GONE"},
    )
    assert result.is_error and "changed while it was being opened" in result.content
    assert (outside / "notes.txt").read_text() == "SECRET outside\n"


async def test_an_unswapped_path_reads_and_writes_as_before(
    root: Path, swap_after_check: list[Callable[[], None]], tools_here: list[Tool]
) -> None:
    (root / "dir").mkdir()
    written = await call(tools_here, "write", {"path": "dir/a.txt", "content": "one\n"})
    assert not written.is_error, written.content
    edited = await call(
        tools_here, "edit", {"path": "dir/a.txt", "oldText": "one", "newText": "two"}
    )
    assert not edited.is_error, edited.content
    assert (await call(tools_here, "read", {"path": "dir/a.txt"})).content == "two"


# grep (both engines), ls and find: the folder they were asked about, swapped right after
# the check, and folders inside the tree swapped back and forth while they walk it.

ENGINES = ["python", "rg"]


def search_tools(ctx: ToolContext, engine: str) -> list[Tool]:
    return [make_grep(ctx, engine=engine), make_ls(ctx), make_find(ctx)]


@pytest.fixture
def inside_dir(root: Path) -> Path:
    (root / "dir").mkdir()
    (root / "dir" / "inside.txt").write_text("SECRET-free inside\n")
    return root / "dir"


@pytest.mark.parametrize("engine", ENGINES)
async def test_grep_of_a_folder_swapped_for_a_link_reads_nothing_outside(
    root: Path,
    outside: Path,
    inside_dir: Path,
    swap_after_check: list[Callable[[], None]],
    ctx: ToolContext,
    engine: str,
) -> None:
    swap_after_check.append(folder_becomes_link(root, outside))
    result = await call(search_tools(ctx, engine), "grep", {"pattern": "SECRET", "path": "dir"})
    assert "SECRET outside" not in result.content
    assert result.is_error and "changed while it was being opened" in result.content


async def test_ls_of_a_folder_swapped_for_a_link_lists_nothing_outside(
    root: Path,
    outside: Path,
    inside_dir: Path,
    swap_after_check: list[Callable[[], None]],
    ctx: ToolContext,
) -> None:
    swap_after_check.append(folder_becomes_link(root, outside))
    result = await call(search_tools(ctx, "python"), "ls", {"path": "dir"})
    assert "notes.txt" not in result.content
    assert result.is_error and "changed while it was being opened" in result.content


async def test_find_in_a_folder_swapped_for_a_link_finds_nothing_outside(
    root: Path,
    outside: Path,
    inside_dir: Path,
    swap_after_check: list[Callable[[], None]],
    ctx: ToolContext,
) -> None:
    swap_after_check.append(folder_becomes_link(root, outside))
    result = await call(search_tools(ctx, "python"), "find", {"pattern": "*.txt", "path": "dir"})
    assert "notes.txt" not in result.content
    assert result.is_error and "changed while it was being opened" in result.content


class Swapper:
    """A folder of the tree swapped for a link to ``outside`` and back, as fast as a
    thread can, while the tools walk the tree (the concurrent command of the issue)."""

    def __init__(self, root: Path, outside: Path) -> None:
        self.root, self.outside = root, outside
        self.running = True
        self.swaps = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        folder, parked = self.root / "dir", self.root / "dir.was"
        while self.running:
            folder.rename(parked)
            os.symlink(self.outside, folder)
            folder.unlink()
            parked.rename(folder)
            self.swaps += 1

    def __enter__(self) -> Swapper:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.running = False
        self.thread.join()


@pytest.mark.parametrize(("engine", "calls"), [("python", 150), ("rg", 40)])
async def test_grep_ls_find_never_leak_while_a_folder_is_swapped_during_the_walk(
    root: Path, outside: Path, inside_dir: Path, ctx: ToolContext, engine: str, calls: int
) -> None:
    (inside_dir / "deeper").mkdir()
    (inside_dir / "deeper" / "x.txt").write_text("SECRET-free\n")
    tools = search_tools(ctx, engine)
    leaks: list[str] = []
    with Swapper(root, outside) as swapper:
        for _ in range(calls):
            for name, args in (
                ("grep", {"pattern": "SECRET"}),
                ("find", {"pattern": "*.txt"}),
                ("ls", {"path": "dir"}),
            ):
                result = await call(tools, name, args)
                if "SECRET outside" in result.content or "notes.txt" in result.content:
                    leaks.append(f"{name}: {result.content}")
    assert swapper.swaps > 0
    assert leaks == []
