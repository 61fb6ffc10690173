"""What the editor has told us about each open document: is it saved, and has it moved.

Dirty state comes from the protocol, not from guessing: a document is *unsaved* when a
``textDocument/didChange`` that was not the agent's own edit arrived after its last
``textDocument/didSave``. At ``didOpen`` it is unsaved when the text the editor opened
differs from the file on disk (a buffer restored with unsaved work, a file changed
since); that comparison runs off the event loop, and any notification that arrives
before it finishes wins over it. (A ``didOpen`` whose comparison has not finished yet
counts as saved: the agent cannot have read the document in that moment.)

The agent's own edit is announced with ``expect`` before it is sent: the ``didChange``
that brings the buffer to exactly that text leaves the dirty state as it was (the user
did not type it). Anything else in the same change (the user typing at the same
moment) makes the document unsaved, as it should.

``until`` lets the editor code wait for the buffer to reach a text (the client's
``didChange`` may come after its answer to ``workspace/applyEdit``; Neovim delays it
by up to 150 ms) without polling: every notification about a document wakes the
waiters of that document.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from crank.agent.tasks import Tasks
from crank.tools.agreement import body_of, disk_body, most_bytes


@dataclass
class DocumentState:
    unsaved: bool = False
    generation: int = 0
    """Bumped by every notification, so a late disk comparison knows it is stale."""
    expected: list[str] = field(default_factory=list)
    saves: int = 0
    """How many ``didSave`` arrived for this document (so a waiter can see a new one)."""
    disk: str | None = None
    """The disk's text (a body) as of the last open, save or write we know of: if the
    disk holds something else now, something outside the editor changed the file."""


class DocumentSync:
    """One per connection. Keys are URIs exactly as the client sent them."""

    def __init__(self, path_of: Callable[[str], Path | None]) -> None:
        self._path_of = path_of
        self._states: dict[str, DocumentState] = {}
        self._wake: dict[str, asyncio.Event] = {}
        self._tasks = Tasks()

    def state(self, uri: str) -> DocumentState | None:
        return self._states.get(uri)

    def unsaved(self, uri: str) -> bool:
        state = self._states.get(uri)
        return state is not None and state.unsaved

    def saves(self, uri: str) -> int:
        state = self._states.get(uri)
        return state.saves if state is not None else 0

    def _notify(self, uri: str) -> None:
        event = self._wake.pop(uri, None)
        if event is not None:
            event.set()

    # -- notifications ------------------------------------------------------------------

    def opened(self, uri: str, text: str) -> None:
        """Start tracking ``uri`` now (so a ``didChange`` right behind the ``didOpen``
        finds it) and compare with the disk in a worker thread."""
        state = DocumentState()
        self._states[uri] = state
        self._tasks.start(self._compare(uri, state, state.generation, text))

    async def _compare(self, uri: str, state: DocumentState, generation: int, text: str) -> None:
        path = self._path_of(uri)
        most = most_bytes(text)
        disk = await asyncio.to_thread(disk_body, path, most) if path is not None else None
        if self._states.get(uri) is state and state.generation == generation:
            state.unsaved = disk != body_of(text)
            state.disk = disk
        self._notify(uri)

    def changed(self, uri: str, text: str) -> None:
        state = self._states.setdefault(uri, DocumentState())
        state.generation += 1
        if text in state.expected:
            del state.expected[: state.expected.index(text) + 1]
        else:
            state.unsaved = True
        self._notify(uri)

    def saved(self, uri: str, text: str | None) -> None:
        state = self._states.setdefault(uri, DocumentState())
        state.generation += 1
        state.unsaved = False
        state.saves += 1
        state.disk = body_of(text) if text is not None else None
        self._notify(uri)

    async def close(self) -> None:
        """End the comparisons with the disk still running (the connection is going)."""
        await self._tasks.close()

    def closed(self, uri: str) -> None:
        self._states.pop(uri, None)
        self._notify(uri)

    # -- the agent's side -----------------------------------------------------------------

    def expect(self, uri: str, text: str) -> None:
        """The agent is about to change the buffer to ``text``; that change is not the
        user's."""
        self._states.setdefault(uri, DocumentState()).expected.append(text)

    def wrote(self, uri: str, text: str) -> None:
        """Crank wrote ``text`` to the document's file itself (the client cannot save)."""
        state = self._states.get(uri)
        if state is not None:
            state.disk = body_of(text)

    def forget(self, uri: str, text: str) -> None:
        """The announced change will not come (the client refused it)."""
        state = self._states.get(uri)
        if state is not None and text in state.expected:
            state.expected.remove(text)

    async def until(self, uri: str, done: Callable[[], bool], within: float) -> bool:
        """Wait until ``done()`` holds, re-checked at every notification about ``uri``;
        False when ``within`` seconds pass first."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while not done():
            left = deadline - loop.time()
            if left <= 0:
                return False
            event = self._wake.setdefault(uri, asyncio.Event())
            try:
                await asyncio.wait_for(event.wait(), left)
            except TimeoutError:
                return done()
        return True
