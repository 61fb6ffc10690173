"""The daily refresh: the system prompt names today's date, so it is rebuilt when the
day changes, and a server left running overnight does not brief the agent with
yesterday. One task, owned here, cancelled by ``stop``."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Awaitable, Callable


def seconds_until_tomorrow() -> float:
    """From now to a second past the next local midnight."""
    now = datetime.datetime.now()
    midnight = datetime.datetime.combine(now.date() + datetime.timedelta(days=1), datetime.time())
    return (midnight - now).total_seconds() + 1


class DailyRefresh:
    """Calls ``refresh`` once each time ``today()`` has moved on after a midnight."""

    def __init__(
        self,
        refresh: Callable[[], Awaitable[object]],
        today: Callable[[], datetime.date] = datetime.date.today,
        *,
        wait: Callable[[], float] | None = None,
    ) -> None:
        self._refresh = refresh
        self._today = today
        self._wait = wait
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._each_day(), name="crank-daily-refresh")

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _each_day(self) -> None:
        built_for = self._today()
        while True:
            wait = self._wait or seconds_until_tomorrow
            await asyncio.sleep(wait())
            if self._today() != built_for:
                built_for = self._today()
                await self._refresh()
