"""The watcher, on real files in tmp_path with real inotify watches (our own on Linux,
watchfiles elsewhere)."""

from __future__ import annotations

import asyncio
import datetime
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from prompt_helpers import bash_tool, read_tool

from crank.prompt import PromptLocations, PromptWatcher, SystemPrompt, compute_prompt, dirwatch
from crank.prompt.loader import UNTRUSTED
from crank.prompt.watcher import inotify_watch_count

DAY = datetime.date(2026, 3, 14)
QUIET = 0.3
"""Seconds to let an event that should be ignored arrive (step 10 ms + debounce 100 ms)."""


class Recorder:
    """Owner stand-in: counts rebuilds and keeps every announced prompt."""

    def __init__(self, locations: PromptLocations) -> None:
        self.locations = locations
        self.rebuilds = 0
        self.announced: asyncio.Queue[SystemPrompt] = asyncio.Queue()
        self.problems: list[str] = []

    async def rebuild(self) -> SystemPrompt:
        self.rebuilds += 1
        build = await compute_prompt([read_tool(), bash_tool()], self.locations, DAY)
        self.problems.extend(build.problems)
        return build.prompt

    async def on_change(self, prompt: SystemPrompt) -> None:
        await self.announced.put(prompt)

    async def next(self) -> SystemPrompt:
        """The next announced prompt; the issue's promise is "within one second"."""
        async with asyncio.timeout(1.0):
            return await self.announced.get()

    async def until(self, fragment: str) -> SystemPrompt:
        """The first announced prompt holding ``fragment`` (a write may be seen in parts)."""
        prompt = await self.next()
        while fragment not in prompt.text:
            prompt = await self.next()
        return prompt


def skill_md(name: str, description: str) -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\nSteps.\n"


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = tmp_path / "shop"
    write(project / "AGENTS.md", "Use uv, never pip.\n")
    write(project / "src" / "app.py", "X = 1\n")
    (project / "node_modules" / "left-pad").mkdir(parents=True)
    return project


@pytest.fixture
async def started(root: Path) -> AsyncIterator[tuple[PromptWatcher, Recorder]]:
    locations = PromptLocations(root, root / "src", True, user_dir=root.parent / "user-config")
    recorder = Recorder(locations)
    initial = await recorder.rebuild()
    watcher = PromptWatcher(locations, recorder.rebuild, recorder.on_change, initial=initial)
    await watcher.start()
    try:
        yield watcher, recorder
    finally:
        await watcher.stop()


async def test_writing_agents_md_announces_the_new_prompt_within_a_second(
    started: tuple[PromptWatcher, Recorder], root: Path
) -> None:
    watcher, recorder = started
    write(root / "AGENTS.md", "Use uv, never pip. Run make check before committing.\n")
    prompt = await recorder.next()
    assert "Run make check before committing." in prompt.text
    assert watcher.current == prompt


async def test_an_unrelated_source_file_rebuilds_nothing(
    started: tuple[PromptWatcher, Recorder], root: Path
) -> None:
    _, recorder = started
    base = recorder.rebuilds
    write(root / "src" / "app.py", "X = 2\n")
    write(root / "main.py", "print()\n")
    write(root / "node_modules" / "left-pad" / "AGENTS.md", "Not on the path.\n")
    await asyncio.sleep(QUIET)
    assert recorder.rebuilds == base
    write(root / "src" / "AGENTS.md", "Source rules.\n")  # src is cwd: on the path
    prompt = await recorder.next()
    assert "Source rules." in prompt.text
    assert recorder.rebuilds == base + 1
    assert recorder.announced.empty()


async def test_equal_bytes_announce_nothing(
    started: tuple[PromptWatcher, Recorder], root: Path
) -> None:
    _, recorder = started
    base = recorder.rebuilds
    write(root / "AGENTS.md", "Use uv, never pip.\n")
    for _ in range(100):
        if recorder.rebuilds > base:
            break
        await asyncio.sleep(0.02)
    assert recorder.rebuilds > base  # the change was seen and rebuilt...
    await asyncio.sleep(QUIET)
    assert recorder.announced.empty()  # ...and, the bytes being equal, not announced


async def test_deleting_and_breaking_inputs_never_stops_the_watcher(
    started: tuple[PromptWatcher, Recorder], root: Path
) -> None:
    watcher, recorder = started
    (root / "AGENTS.md").unlink()
    prompt = await recorder.next()
    assert "Use uv" not in prompt.text
    write(root / ".crank" / "skills" / "bad" / "SKILL.md", "---\nname: [broken\n---\n")
    write(root / ".crank" / "skills" / "good" / "SKILL.md", skill_md("good", "Fine."))
    await recorder.until("- good: Fine.")
    assert any("not valid YAML" in problem for problem in recorder.problems)
    shutil.rmtree(root / ".crank")
    prompt = await recorder.next()
    assert "good" not in prompt.text
    assert watcher.running
    write(root / "AGENTS.md", "Back again.\n")
    assert "Back again." in (await recorder.next()).text


async def test_a_skills_directory_created_later_is_noticed(
    started: tuple[PromptWatcher, Recorder], root: Path
) -> None:
    _, recorder = started
    assert not (root / ".agents").exists()
    write(root / ".agents" / "skills" / "release" / "SKILL.md", skill_md("release", "Ship it."))
    await recorder.until("- release: Ship it.")
    write(root / ".agents" / "skills" / "release" / "SKILL.md", skill_md("release", "Ship v2."))
    prompt = await recorder.next()
    assert "- release: Ship v2." in prompt.text


async def test_the_user_config_dir_is_watched_even_before_it_exists(
    started: tuple[PromptWatcher, Recorder], root: Path
) -> None:
    _, recorder = started
    write(root.parent / "user-config" / "AGENTS.md", "Answer briefly.\n")
    prompt = await recorder.until("Answer briefly.")
    assert prompt.text.index("Answer briefly.") < prompt.text.index("Use uv")


async def test_stopped_watcher_announces_nothing_and_stops_twice(
    started: tuple[PromptWatcher, Recorder], root: Path
) -> None:
    watcher, recorder = started
    await watcher.stop()
    assert not watcher.running
    write(root / "AGENTS.md", "Changed after stop.\n")
    await asyncio.sleep(QUIET)
    assert recorder.announced.empty()
    await watcher.stop()


async def test_the_plan_watches_few_directories_and_none_below_node_modules(
    started: tuple[PromptWatcher, Recorder], root: Path
) -> None:
    watcher, _ = started
    targets = set(watcher.plan.targets)
    assert root in targets and root / "src" in targets
    assert not any("node_modules" in str(t) for t in targets)
    assert len(targets) <= 4  # root, src, and the nearest existing parents of what is missing


async def test_a_change_before_start_completes_is_not_lost(root: Path) -> None:
    locations = PromptLocations(root, root, True, user_dir=root.parent / "user-config")
    recorder = Recorder(locations)
    initial = await recorder.rebuild()
    write(root / "AGENTS.md", "Changed between the first build and the watch.\n")
    watcher = PromptWatcher(locations, recorder.rebuild, recorder.on_change, initial=initial)
    await watcher.start()
    try:
        assert "Changed between" in (await recorder.next()).text
    finally:
        await watcher.stop()


async def test_a_failing_rebuild_or_callback_keeps_the_last_prompt(root: Path) -> None:
    locations = PromptLocations(root, root, True, user_dir=root.parent / "user-config")
    recorder = Recorder(locations)
    calls = 0

    async def flaky() -> SystemPrompt:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise OSError("disk went away")
        return await recorder.rebuild()

    async def angry(prompt: SystemPrompt) -> None:
        await recorder.on_change(prompt)
        raise RuntimeError("owner bug")

    watcher = PromptWatcher(locations, flaky, angry)
    await watcher.start()  # call 1: first prompt, announced (and the callback raises)
    try:
        first = await recorder.next()
        write(root / "AGENTS.md", "One.\n")  # call 2 raises: nothing announced
        await asyncio.sleep(QUIET)
        assert watcher.current == first
        write(root / "AGENTS.md", "Two.\n")
        await recorder.until("Two.")
        assert watcher.running
    finally:
        await watcher.stop()


async def test_inotify_watches_stay_few_however_big_node_modules_is(tmp_path: Path) -> None:
    root = tmp_path / "big"
    for n in range(300):
        (root / "node_modules" / f"pkg{n}" / "lib").mkdir(parents=True)
    (root / ".git" / "objects" / "ab").mkdir(parents=True)
    write(root / "AGENTS.md", "Rules.\n")
    locations = PromptLocations(root, root, True, user_dir=tmp_path / "user-config")
    recorder = Recorder(locations)
    before = await settled_watch_count()  # earlier tests' watchers release theirs lazily
    watcher = PromptWatcher(locations, recorder.rebuild, recorder.on_change)
    await watcher.start()
    try:
        held = inotify_watch_count() - before
    finally:
        await watcher.stop()
    assert 1 <= held <= 3  # root and tmp_path (nearest parent of the missing user dir)
    assert await settled_watch_count() == before


async def settled_watch_count() -> int:
    """The process's inotify watch count once it has stopped changing for 100 ms."""
    last = inotify_watch_count()
    for _ in range(40):
        await asyncio.sleep(0.1)
        now = inotify_watch_count()
        if now == last:
            return now
        last = now
    return last


async def test_granting_trust_announces_the_project_files(root: Path) -> None:
    untrusted = PromptLocations(root, root, False, user_dir=root.parent / "user-config")
    recorder = Recorder(untrusted)
    watcher = PromptWatcher(untrusted, recorder.rebuild, recorder.on_change)
    await watcher.start()
    try:
        first = await recorder.next()
        assert "Use uv" not in first.text
        skipped = {"kind": "skipped", "path": str(root / "AGENTS.md"), "reason": UNTRUSTED}
        assert skipped in first.sources
        recorder.locations = PromptLocations(root, root, True, user_dir=untrusted.user_dir)
        await watcher.set_locations(recorder.locations)
        assert "Use uv, never pip." in (await recorder.next()).text
    finally:
        await watcher.stop()


def _threads() -> int:
    """Every thread of this process, native ones included (watchfiles' are native)."""
    return len(list(Path("/proc/self/task").iterdir()))


@pytest.mark.skipif(not dirwatch.available(), reason="inotify is Linux's")
async def test_twenty_idle_folders_hold_no_thread_and_still_hear_a_change(tmp_path: Path) -> None:
    """Idle is idle: watchfiles' loop held a thread per folder waking every 10 ms (20
    folders: 41 threads, 2,000 wake-ups a second). The watches now sit on the event
    loop, so starting twenty adds no thread (after the first, which may warm the pool
    of worker threads that reads the files), and a change still arrives."""
    before = 0
    owners: list[tuple[PromptWatcher, Recorder, Path]] = []
    try:
        for n in range(20):
            project = tmp_path / f"folder{n}"
            write(project / "AGENTS.md", f"Folder {n}.\n")
            locations = PromptLocations(project, project, True, user_dir=tmp_path / "user")
            recorder = Recorder(locations)
            watcher = PromptWatcher(
                locations, recorder.rebuild, recorder.on_change, initial=await recorder.rebuild()
            )
            await watcher.start()
            owners.append((watcher, recorder, project))
            before = before or _threads()
        assert _threads() == before
        _, recorder, project = owners[7]
        write(project / "AGENTS.md", "Folder 7, revised.\n")
        assert "Folder 7, revised." in (await recorder.until("revised")).text
    finally:
        for watcher, _, _ in owners:
            await watcher.stop()
