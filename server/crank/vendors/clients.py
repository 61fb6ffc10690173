"""The model's HTTP client, lent to one request at a time and replaced after a cancel.

Why: httpcore 1.0.9 (encode/httpcore#1093, #830, #658) can leave a connection behind
in its pool when a request is cancelled after the pool has given it a new connection
but before that connection started connecting. The leftover is neither idle, closed
nor usable, so it holds one of the pool's ``max_connections`` slots for good; once
they are all held, every later request waits for the pool timeout and fails. Aborts
are cancellations, so an editor session that aborts often enough would wedge its
model. httpcore gives no public way to reclaim such a slot.

The same remedy serves a server that drops a kept-alive connection (``retire``): the
pool would hand that connection out again, and the request sent on it is lost.

What is promised: a request that ends by cancellation retires the client it used; the
next request gets a fresh client (a fresh pool), and the retired one is closed as
soon as no request still uses it. Requests running concurrently on the retired client
finish undisturbed. The cost is one new connection after an abort. A client passed in
by the caller is the caller's: it is never retired or closed here.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import httpx


class ClientKeeper:
    """Owns (or borrows) the ``httpx.AsyncClient`` a model sends its requests with."""

    def __init__(
        self, make: Callable[[], httpx.AsyncClient], given: httpx.AsyncClient | None = None
    ) -> None:
        self._make = make
        self._given = given
        self._current: httpx.AsyncClient | None = given
        self._users: dict[httpx.AsyncClient, int] = {}
        self._retired: set[httpx.AsyncClient] = set()
        self._closing: set[asyncio.Task[None]] = set()

    def current(self) -> httpx.AsyncClient:
        """The client the next request will use (made on first use)."""
        if self._current is None:
            self._current = self._make()
        return self._current

    @asynccontextmanager
    async def lease(self) -> AsyncIterator[httpx.AsyncClient]:
        """The client for one request. If the request is cancelled, the client is
        retired (unless the caller gave it) and closed once its last user is done."""
        client = self.current()
        self._users[client] = self._users.get(client, 0) + 1
        try:
            yield client
        except asyncio.CancelledError:
            self._retire(client)
            raise
        finally:
            self._users[client] -= 1
            if not self._users[client]:
                del self._users[client]
                if client in self._retired:
                    self._retired.discard(client)
                    await self._close(client)

    async def retire(self, client: httpx.AsyncClient) -> None:
        """Lend ``client`` no more: the server dropped, or is about to drop, a
        connection in its pool that httpx would hand out again (a server that says
        keep-alive and then closes, as llama-cpp-python's does after an error). The
        next request gets a fresh client; this one is closed now, or once the
        requests still using it end. A client the caller gave is kept."""
        self._retire(client)
        if client in self._retired and client not in self._users:
            self._retired.discard(client)
            await self._close(client)

    def _retire(self, client: httpx.AsyncClient) -> None:
        if client is self._given:
            return
        self._retired.add(client)
        if self._current is client:
            self._current = None

    async def _close(self, client: httpx.AsyncClient) -> None:
        """Close ``client`` in a task of its own, so a second cancel of the request
        cannot leave it half closed; ``aclose`` waits for any such leftover."""
        task = asyncio.get_running_loop().create_task(client.aclose())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)
        await asyncio.shield(task)

    async def aclose(self) -> None:
        """Close the client this keeper made (never a given one) and finish any close
        still under way. Clients still lent out are closed when their request ends."""
        current, self._current = self._current, self._given
        if current is not None and current is not self._given and current not in self._users:
            await current.aclose()
        elif current is not None and current is not self._given:
            self._retired.add(current)
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
