"""Background tasks have one owner, and an owner that is closed has nothing running."""

from __future__ import annotations

import asyncio

import pytest

from crank.agent.harness import Harness
from crank.agent.scripted import ScriptedModel, say
from crank.agent.tasks import Tasks


async def test_close_cancels_what_runs_and_waits_for_it() -> None:
    tasks = Tasks()
    ended: list[str] = []

    async def forever(name: str) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            ended.append(name)

    held = [tasks.start(forever("a")), tasks.start(forever("b"))]
    await asyncio.sleep(0)
    assert len(tasks) == 2
    await tasks.close()
    assert sorted(ended) == ["a", "b"]
    assert all(task.cancelled() for task in held)
    assert len(tasks) == 0
    with pytest.raises(RuntimeError, match="closed"):
        tasks.start(forever("late"))
    await tasks.close()  # twice is fine


async def test_a_task_may_close_its_own_owner() -> None:
    tasks = Tasks()
    other = tasks.start(asyncio.Event().wait())

    async def closer() -> str:
        await tasks.close()
        return "closed"

    assert await tasks.start(closer()) == "closed"
    assert other.cancelled()


async def test_a_closed_harness_leaves_no_announcement_running() -> None:
    """A queue change outside a run is announced in the background; a listener that
    never returns must not keep that task alive past the Harness's close."""
    harness = Harness(system="s", tools=[], model=ScriptedModel([say("hi")]))
    stuck = asyncio.Event()

    async def slow_listener(event: object) -> None:
        await stuck.wait()

    harness.subscribe(slow_listener)
    before = asyncio.all_tasks()
    harness.follow_up("later")  # idle: queued, and the queue change is announced
    await asyncio.sleep(0)
    assert asyncio.all_tasks() - before, "the announcement runs in a task of its own"
    await harness.close()
    assert {task for task in asyncio.all_tasks() - before if not task.done()} == set()


def test_the_server_starts_tasks_one_way() -> None:
    """One idiom (docs/architecture.md): tasks are made with ``create_task`` and held by
    their owner; ``ensure_future``, which also wraps futures and hides what it was
    handed, is not used beside it."""
    from pathlib import Path

    server = Path(__file__).resolve().parents[2] / "server" / "crank"
    users = [
        str(path.relative_to(server))
        for path in sorted(server.rglob("*.py"))
        if "ensure_future(" in path.read_text("utf-8")
    ]
    assert users == []
