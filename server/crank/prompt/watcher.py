"""The watcher: keeps the prompt true while the editor is open, without watching the tree.

One ``PromptWatcher`` per workspace, started and stopped by its owner. It watches only
the directories whose direct entries can feed the prompt (or the commands), each one
*non-recursively* (inotify then costs one watch per directory, not one per directory of
the repository, so ``node_modules`` and ``.git`` cost nothing). On Linux the watches are
read on the event loop (``dirwatch.py``), so an idle workspace costs no thread and no
wake-up; elsewhere watchfiles' loop (``recursive=False``) looks every ``step_ms``:

- every directory from the workspace root down to the working directory (their
  ``AGENTS.md``/``CLAUDE.md``), and the user config directory;
- each skills directory and each skill folder in it (only ``<folder>/SKILL.md``'s front
  matter reaches the prompt, so nothing deeper is watched);
- each prompt-template directory (``<user dir>/prompts``, ``.crank/prompts``): its
  ``*.md`` files are the ``/name`` commands;
- the parent directory of every extra file the owner names (settings files);
- for anything above that does not exist yet, its nearest existing ancestor, so that
  creating ``.crank/skills`` (or the user config directory) is noticed.

Events are filtered down to the paths that matter. After a relevant change the watch
set is recomputed (a new skill folder, a created skills directory) and the watch is
restarted if it changed; then the owner's ``rebuild`` is awaited (after every relevant
change, so an owner that also keeps the commands list sees a template change) and,
only if the new prompt's hash differs from the last one, ``on_change`` is awaited
with it. A rebuild
that raises, a watch that fails (a directory deleted under it) or a callback that
raises is logged and the watcher carries on: it never takes the workspace down.

Swapping the prompt in between runs (never mid-run) is the Harness's job: the owner
hands the new text to ``Harness.set_system`` in ``on_change``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from watchfiles import Change, awatch

from . import dirwatch
from .builder import SystemPrompt
from .loader import CONTEXT_NAMES, SKILL_FILE, PromptLocations
from .templates import TEMPLATE_SUFFIX

log = logging.getLogger(__name__)

Rebuild = Callable[[], Awaitable[SystemPrompt]]
OnChange = Callable[[SystemPrompt], Awaitable[None]]

RETRY_DELAY = 0.5
"""Seconds to wait before re-arming after the watch itself failed."""


def inotify_watch_count() -> int:
    """Inotify watches this process holds (Linux; 0 elsewhere), read from
    /proc/self/fdinfo: one ``inotify wd:`` line per watch. For diagnostics and benches."""
    total = 0
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return 0
    for fd in fds:
        try:
            if os.readlink(f"/proc/self/fd/{fd}") != "anon_inode:inotify":
                continue
            with open(f"/proc/self/fdinfo/{fd}") as info:
                total += sum(1 for line in info if line.startswith("inotify wd:"))
        except OSError:
            continue
    return total


def _nearest_existing(path: Path) -> Path | None:
    for candidate in (path, *path.parents):
        if candidate.is_dir():
            return candidate
    return None


class WatchPlan:
    """What to watch for one set of locations, and which event paths are relevant.

    Computed from the disk as it is now; recomputed after every relevant change.
    """

    def __init__(self, locations: PromptLocations, extra_files: Sequence[Path]) -> None:
        self.context_dirs = {*locations.path_dirs(), locations.user_dir}
        self.skills_dirs = {path for path, _ in locations.skills_dirs()}
        self.prompts_dirs = {path for path, _ in locations.prompts_dirs()}
        self.extra_files = set(extra_files)
        wanted: set[Path] = set(self.context_dirs) | set(self.skills_dirs) | self.prompts_dirs
        wanted |= {path.parent for path in self.extra_files}
        self.skill_folders: set[Path] = set()
        for skills_dir in self.skills_dirs:
            with contextlib.suppress(OSError):
                self.skill_folders |= {p for p in skills_dir.iterdir() if p.is_dir()}
        wanted |= self.skill_folders
        self.pending = {path for path in wanted if not path.is_dir()}
        """Wanted directories that do not exist yet: their creation must be noticed."""
        targets = {_nearest_existing(path) for path in wanted}
        self.targets: tuple[Path, ...] = tuple(sorted(t for t in targets if t is not None))

    def relevant(self, path: Path) -> bool:
        parent = path.parent
        if path.name in CONTEXT_NAMES and parent in self.context_dirs:
            return True
        if path in self.extra_files or parent in self.skills_dirs:
            return True
        if path.suffix == TEMPLATE_SUFFIX and parent in self.prompts_dirs:
            return True
        if path.name == SKILL_FILE and parent in self.skill_folders | self.pending:
            return True
        if path in self.skill_folders or path in self.targets:
            return True  # a watched directory itself was removed or replaced
        return any(path == p or path in p.parents for p in self.pending)


class PromptWatcher:
    """Rebuilds the prompt when its inputs change and reports a changed prompt.

    ``initial`` is the prompt the owner already has (so an unchanged rebuild right
    after start announces nothing). ``step_ms``/``debounce_ms`` are watchfiles'
    settings: a change is seen after about ``step_ms`` and batched for at most
    ``debounce_ms``.
    """

    def __init__(
        self,
        locations: PromptLocations,
        rebuild: Rebuild,
        on_change: OnChange,
        *,
        initial: SystemPrompt | None = None,
        extra_files: Sequence[Path] = (),
        step_ms: int = 10,
        debounce_ms: int = 100,
    ) -> None:
        self._locations = locations
        self._rebuild = rebuild
        self._on_change = on_change
        self._current = initial
        self._extra_files = tuple(extra_files)
        self._step_ms = step_ms
        self._debounce_ms = debounce_ms
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._restart: asyncio.Event | None = None
        self._lock = asyncio.Lock()
        self.plan = WatchPlan(locations, self._extra_files)

    @property
    def current(self) -> SystemPrompt | None:
        """The last prompt built (or given as ``initial``)."""
        return self._current

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def start(self) -> None:
        """Arm the watch, then rebuild once, so that a change made between the owner's
        first build and the watch being in place is not lost. Returns once armed."""
        if self.running:
            raise RuntimeError("the prompt watcher is already running")
        self._stop = asyncio.Event()
        armed = asyncio.Event()
        self._task = asyncio.create_task(self._run(armed), name="crank-prompt-watcher")
        waiter = asyncio.create_task(armed.wait())
        await asyncio.wait({self._task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        await self.refresh()

    async def stop(self) -> None:
        """Stop watching; returns once the watch is released. Safe to call twice."""
        task, self._task = self._task, None
        if task is None:
            return
        if self._stop is not None:
            self._stop.set()
        try:
            async with asyncio.timeout(5):
                await asyncio.shield(task)
        except TimeoutError:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def set_locations(self, locations: PromptLocations) -> None:
        """New locations (the working directory moved, trust was granted): re-aim the
        watch and rebuild."""
        self._locations = locations
        self._replan()
        await self.refresh()

    async def refresh(self) -> SystemPrompt | None:
        """Rebuild now; announce if the bytes changed. Returns the current prompt."""
        async with self._lock:
            try:
                prompt = await self._rebuild()
            except Exception:
                log.exception("rebuilding the system prompt failed; keeping the last one")
                return self._current
            if self._current is not None and prompt.hash == self._current.hash:
                return self._current
            self._current = prompt
            try:
                await self._on_change(prompt)
            except Exception:
                log.exception("the system prompt change callback failed")
            return prompt

    def _replan(self) -> bool:
        plan = WatchPlan(self._locations, self._extra_files)
        moved = plan.targets != self.plan.targets
        self.plan = plan
        if moved and self._restart is not None:
            self._restart.set()
        return moved

    def _filter(self, _change: Change, raw: str) -> bool:
        return self.plan.relevant(Path(raw))

    async def _run(self, armed: asyncio.Event) -> None:
        assert self._stop is not None
        while not self._stop.is_set():
            restart = self._restart = asyncio.Event()
            targets = self.plan.targets
            try:
                await self._watch(targets, restart, armed)
            except Exception:
                log.exception("the prompt watch failed; re-arming")
                armed.set()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(RETRY_DELAY):
                        await self._stop.wait()
                self._replan()
            if not self._stop.is_set() and restart.is_set():
                await self.refresh()  # catch what changed while the watch was re-armed

    async def _watch(
        self, targets: tuple[Path, ...], restart: asyncio.Event, armed: asyncio.Event
    ) -> None:
        """Watch ``targets`` until stopped or restarted, refreshing after each batch."""
        assert self._stop is not None
        either = asyncio.Event()

        async def relay(event: asyncio.Event) -> None:
            await event.wait()
            either.set()

        relays = [asyncio.create_task(relay(self._stop)), asyncio.create_task(relay(restart))]
        try:
            if dirwatch.available():
                await self._watch_inotify(targets, armed, either)
            else:
                await self._watch_polling(targets, armed, either)
        finally:
            for task in relays:
                task.cancel()
            await asyncio.gather(*relays, return_exceptions=True)

    async def _watch_inotify(
        self, targets: tuple[Path, ...], armed: asyncio.Event, either: asyncio.Event
    ) -> None:
        """Linux: the kernel's notifications on the event loop; nothing is awake at idle."""
        watch = dirwatch.DirWatch(targets, self.plan.relevant)
        try:
            armed.set()
            while (batch := await watch.next_batch(either)) is not None:
                if batch:
                    self._replan()
                    await self.refresh()
        finally:
            watch.close()

    async def _watch_polling(
        self, targets: tuple[Path, ...], armed: asyncio.Event, either: asyncio.Event
    ) -> None:
        """Elsewhere: watchfiles, whose thread looks for changes every ``step_ms``."""
        changes = awatch(
            *targets,
            watch_filter=self._filter,
            recursive=False,
            stop_event=either,
            step=self._step_ms,
            debounce=self._debounce_ms,
            yield_on_timeout=False,
        )

        async def next_batch() -> set[tuple[Change, str]] | None:
            return await anext(changes, None)

        first = asyncio.create_task(next_batch())
        await asyncio.sleep(0)  # awatch arms its watches before its first await
        armed.set()
        batch = await first
        while batch is not None:
            self._replan()
            await self.refresh()
            batch = await next_batch()
