"""Background tasks with one owner.

asyncio keeps only a weak reference to a task, so a task nobody holds can vanish
mid-flight, and a task held in a plain set outlives its owner unless somebody
remembers to cancel it. ``Tasks`` is the one way Crank holds the work it starts in the
background: each task is held until it ends, and ``close`` cancels what is left and
waits for it, so an owner that is closed has nothing of its own still running
(docs/architecture.md, "Concurrency: one idiom").
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class Tasks:
    """The background tasks of one owner (a Harness, a host, a server part)."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False

    def start(self, work: Coroutine[Any, Any, T], *, name: str | None = None) -> asyncio.Task[T]:
        """Run ``work`` in a task held until it ends. Refused once closed: the owner is
        gone, and work started now would outlive it."""
        if self._closed:
            work.close()
            raise RuntimeError("this owner is closed; it starts no more tasks")
        task = asyncio.get_running_loop().create_task(work, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def close(self) -> None:
        """Cancel every task still running and wait until each has ended. Safe twice,
        and from inside one of the tasks (that one is left to finish on its own)."""
        self._closed = True
        current = asyncio.current_task()
        while pending := [task for task in self._tasks if task is not current]:
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    async def wait(self) -> None:
        """Wait, without cancelling, until the tasks running now have ended."""
        await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def __len__(self) -> int:
        return len(self._tasks)
