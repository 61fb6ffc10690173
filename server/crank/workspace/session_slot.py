"""The session slot: which session a workspace has open, and everything tied to it.

A workspace has one active session at a time. Until its first prompt it is only an id
(an unused session leaves nothing on disk); the first prompt creates the file. The slot
owns the open ``SessionLog`` (its lock, its saver), the ``Housekeeper`` that keeps
that session inside the model's window, and the session's id. Changing the session
(new, open, branch, compact) is refused while a run is active, because the Harness's
transcript is the session's and only the Harness writes it (principle 6); every change
replaces the Harness's transcript with what the log replays (principle 7).

The slot is the Harness's ``build_request``, ``before_request`` and
``recover_overflow`` hooks and, through ``save``, the first thing that hears every
event, so a message is on disk before anybody is told about it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio.to_thread

from crank.agent.events import ContextUsage, Event
from crank.agent.harness import Harness
from crank.agent.lineage import LazyRecord, Lineage, LineageList
from crank.agent.loop import RunPrompt
from crank.agent.messages import Message
from crank.agent.model import Model, ModelRequest
from crank.agent.view import Repairs
from crank.session import (
    ContextSettings,
    Housekeeper,
    SessionError,
    SessionLocked,
    SessionLog,
    SessionStore,
)
from crank.session.log import Listener, new_session_id
from crank.session.usage_totals import UsageTotals

from .errors import NotActiveSession, RefusedWhileRunning, invalid_params
from .sessions import TreeRows

log = logging.getLogger(__name__)

LOCKED_WAIT_S = 3.0
"""How long a resume waits for a session another process holds (a reloaded window's
last server, still closing it), in seconds."""


def open_and_replay(path: Path) -> tuple[SessionLog, Sequence[Message], UsageTotals]:
    """Open a session for writing, read its transcript (``SessionLog.resumed``: its
    messages may stay in the file until read) and sum what it has used: file work and
    passes over every entry, for a thread (not the event loop)."""
    opened = SessionLog.open(path)
    try:
        return opened, opened.resumed(), opened.usage_totals()
    except BaseException:
        opened.close()
        raise


def open_and_measure(
    path: Path, model: Model, context: ContextSettings, prompt: RunPrompt
) -> tuple[SessionLog, Sequence[Message], Housekeeper]:
    """``open_and_replay``, and the session's Housekeeper with the estimate the context
    meter shows next already taken (``Housekeeper.resume``), for a thread too. The
    transcript is the record the Harness is to take as it is (``replace_messages``): a
    growing ``LineageList``, repaired (and measured) under its own lineage, so the first
    request's view repairs only what that request adds; or, when its messages are still
    in the file, a ``LazyRecord`` the Harness reads whole at its next run."""
    opened, transcript, totals = open_and_replay(path)
    record: LineageList | LazyRecord = (
        transcript if isinstance(transcript, LazyRecord) else LineageList(transcript, Lineage())
    )
    try:
        keeper = Housekeeper(opened, model, context, totals=totals)
    except BaseException:
        opened.close()
        raise
    try:
        keeper.resume(record, prompt)
    except Exception:  # only an estimate: the session opens, and the meter measures later
        log.exception("%s: the first estimate of the opened session failed", path)
    return opened, record, keeper


def require_idle(harness: Harness, what: str) -> None:
    """Refuse ``what`` (``refused_while_running``) while a run is active: abort it first."""
    if harness.is_running:
        raise RefusedWhileRunning(f"{what} is refused while a run is active; abort it first")


class SessionSlot:
    """The active session of one workspace: its id, its log and its Housekeeper."""

    def __init__(
        self,
        uri: str,
        root: Path,
        store: SessionStore,
        harness: Harness,
        context: ContextSettings,
    ) -> None:
        self.uri = uri
        self.root = root
        self.store = store
        self.harness = harness
        self.context = context
        """Context settings for the next session opened (a running keeper keeps its own)."""
        self.log: SessionLog | None = None
        self.keeper: Housekeeper | None = None
        self.session_id = new_session_id()
        self._save: Listener | None = None
        self._tree_rows = TreeRows()

    @property
    def file(self) -> Path:
        """Where the session is, or will be once its first prompt is written."""
        return self.store.directory / f"{self.session_id}.jsonl"

    # -- the harness's hooks and first listener --------------------------------------------

    async def save(self, event: Event) -> None:
        """Write the event's message to the log (sets ``entryId``) before anyone hears it."""
        if self._save is not None:
            await self._save(event)

    def trimmed(self) -> bool:
        """True while the ``trim`` policy leaves turns of this session out of requests."""
        return self.keeper is not None and self.keeper.trimmed

    async def build_request(self, record: Sequence[Message], prompt: RunPrompt) -> ModelRequest:
        assert self.keeper is not None, "a run always has a session log"
        return await self.keeper.build_request(record, prompt)

    async def before_request(self, harness: Harness) -> None:
        if self.keeper is not None:
            await self.keeper.before_request(harness)

    async def recover_overflow(self, harness: Harness) -> bool:
        return self.keeper is not None and await self.keeper.recover_overflow(harness)

    def set_model(self, model: Model) -> None:
        if self.keeper is not None:
            self.keeper.set_model(model)

    # -- reading ---------------------------------------------------------------------------

    def usage(self) -> ContextUsage:
        if self.keeper is not None:
            return self.keeper.usage(self.harness)
        # No log yet means a new, empty session: nothing used, nothing in the window.
        return {
            "contextTokens": 0,
            "contextWindow": self.harness.model.context_window,
            "input": 0,
            "output": 0,
            "cacheRead": 0,
            "cacheWrite": 0,
            "cost": 0.0,
        }

    def branched(self) -> bool | None:
        """Whether the session has more than one branch (``SessionTree.forked``); None
        when only reading a history the open left unread would tell."""
        return False if self.log is None else self.log.tree.forked()

    @property
    def repairs(self) -> Repairs:
        """What the request view last repaired in this session's record."""
        return self.keeper.repairs if self.keeper is not None else Repairs()

    async def tree(self) -> dict[str, Any]:
        if self.log is None:
            return {"tip": None, "entries": []}
        await self._read_history()
        return self._tree_rows.json(self.log)

    async def _read_history(self) -> None:
        """Read any history the open left unread (``SessionTree.complete``), in a worker
        thread: it is the decode an open would have made, so it stays off the event loop
        for what needs every entry (the tree view, a branch, a compaction)."""
        if self.log is not None and self.log.tree.unread:
            await anyio.to_thread.run_sync(self.log.tree.complete)

    async def sessions(self) -> dict[str, Any]:
        listed = await anyio.to_thread.run_sync(self.store.list)  # a cold listing reads files
        return {"sessions": [dict(info) for info in listed]}

    def check(self, session_id: str | None) -> None:
        """Refuse (``no_such_session``) a request naming a session that is not the active one."""
        if session_id is not None and session_id != self.session_id:
            raise NotActiveSession(
                f"session {session_id} is not the active session of {self.uri} "
                f"(that is {self.session_id}); open it with crank/openSession first",
            )

    # -- changing --------------------------------------------------------------------------

    def ensure_log(self) -> SessionLog:
        """The open log, created now if the session has none yet (its first prompt)."""
        if self.log is None:
            self._adopt(SessionLog.create(self.store.directory, str(self.root), self.session_id))
        assert self.log is not None
        return self.log

    async def resume_newest(self) -> str | None:
        """Open the newest session of the workspace, if any; the reason it was not
        resumed otherwise (a refused file is reported, never read around).

        A session another process writes is waited for, ``LOCKED_WAIT_S`` at most: a
        window reload starts this server while the last one is still closing the
        same session. Held longer (another window on the folder), it is not resumed."""
        try:
            path = await anyio.to_thread.run_sync(self.store.newest)
            if path is None:
                return None
            opened, messages, keeper = await self._open_when_free(path)
            self.harness.replace_messages(messages)
            self._adopt(opened, keeper)
        except (SessionError, OSError) as exc:
            return str(exc)
        return None

    async def _open_when_free(
        self, path: Path
    ) -> tuple[SessionLog, Sequence[Message], Housekeeper]:
        deadline = anyio.current_time() + LOCKED_WAIT_S
        pause = 0.05
        while True:
            try:
                return await self._open_in_thread(path)
            except SessionLocked:
                if anyio.current_time() + pause > deadline:
                    raise
            await anyio.sleep(pause)
            pause = min(pause * 2, 0.4)

    def new(self) -> str:
        """A new, empty session (nothing on disk until its first prompt)."""
        require_idle(self.harness, "starting a new session")
        self._drop()
        self.session_id = new_session_id()
        self.harness.replace_messages([])
        return self.session_id

    async def open(self, session_id: str) -> bool:
        """Make ``session_id`` the active session; False if it already was."""
        require_idle(self.harness, "opening a session")
        return await self.open_file(self.store.path_of(session_id))

    async def open_file(self, path: Path) -> bool:
        """Make the session in ``path`` the active session; False if it already was."""
        require_idle(self.harness, "opening a session")
        if self.log is not None and self.log.path == path:
            return False
        opened, messages, keeper = await self._open_in_thread(path)
        if self.harness.is_running:  # a prompt won the race while the file was read
            opened.close()
            require_idle(self.harness, "opening a session")
        self._adopt(opened, keeper)
        self.harness.replace_messages(messages)
        return True

    async def _open_in_thread(
        self, path: Path
    ) -> tuple[SessionLog, Sequence[Message], Housekeeper]:
        """``open_and_measure`` in a worker thread, for the prompt the next run would
        carry (a prompt or model changed meanwhile only costs the memo)."""
        prompt = RunPrompt.of(self.harness.system, self.harness.tools)
        return await anyio.to_thread.run_sync(
            open_and_measure, path, self.harness.model, self.context, prompt
        )

    async def branch(self, entry_id: str, summarize: bool) -> dict[str, Any]:
        require_idle(self.harness, "branching")
        if self.log is None:
            raise invalid_params("entryId", f"no entry {entry_id} (the session is still empty)")
        model = self.harness.model if summarize else None
        await self._read_history()
        tip = await self.log.branch_to(entry_id, summarize=model)
        self.harness.replace_messages(self.log.replay())
        if self.keeper is not None:
            self.keeper.recount()
        return {"tip": tip}

    async def compact(self, instructions: str | None) -> dict[str, Any]:
        require_idle(self.harness, "compaction")
        if self.keeper is None:
            return {"compacted": False, "reason": "the session is empty: nothing to compact"}
        await self._read_history()
        return await self.keeper.compact(self.harness, instructions=instructions)

    async def note_model(self, model: Model) -> None:
        """The model changed: the keeper learns its window again and the log records it."""
        self.set_model(model)
        if self.log is not None:
            await self.log.append_model_change(model.api, model.id)

    def close(self) -> None:
        """Release the log's lock (the run, if any, has settled and was saved)."""
        if self.log is not None:
            self.log.close()

    def _adopt(self, new_log: SessionLog, keeper: Housekeeper | None = None) -> None:
        """Make ``new_log`` the active one, kept by ``keeper`` (made off the event loop
        with what the file has used; a new log gets a new one: it has used nothing)."""
        self._drop()
        self.log = new_log
        self._save = new_log.listener(self.harness.messages_after)
        self.session_id = new_log.session_id
        if keeper is None:
            keeper = Housekeeper(new_log, self.harness.model, self.context)
        keeper.set_model(self.harness.model)  # changed while the file was read
        self.keeper = keeper
        keeper.attach(self.harness)

    def _drop(self) -> None:
        if self.keeper is not None:
            self.keeper.detach()
        if self.log is not None:
            self.log.close()
        self.log, self._save, self.keeper = None, None, None


__all__ = ["SessionSlot", "open_and_measure", "open_and_replay", "require_idle"]
