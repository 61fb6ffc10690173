"""SessionLog: the one writer of one session file.

Promises:
- Appending never re-reads the file: ids and the tree are kept in memory, and a line is
  written with one ``O_APPEND`` write, then ``fsync``ed before the append returns. The
  cost of an append does not depend on the size of the file.
- A new file's header is written by ``create`` and made durable by the first append,
  whose ``fsync`` covers it, followed by the folder's (the file's name): both before
  that append returns. ``create`` itself syncs nothing, so a session's first prompt
  waits for no disk on the event loop, and a session given no entry promised nothing.
- The blocking write runs in a worker thread (``append``), and appends are kept in the
  order they were asked for; ``append_sync`` is the same thing for the command line.
- One writer: opening for writing takes an advisory ``flock`` on the file; a second
  process is refused with ``SessionLocked`` and may still ``read`` it.
- If a write fails half way the log refuses every later append (the file may end in a
  torn line that only ``crank sessions repair`` may touch).
- Large images go to ``<id>.blobs/`` (``blobs.py``), synced before the entry that
  names them; the entry keeps a reference.
- The process's view is the file's view: ``replay()`` on the live log and on a freshly
  read file give the same transcript, because both come from the same tree.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread

from crank.agent.events import Event
from crank.agent.messages import ImageBlock, Message, Usage, images_of, now_ms
from crank.agent.model import Model

from . import jsonio
from .blobs import blob_dir, stored_message
from .blobs import load as load_blob
from .branch_summary import abandoned_messages, summarize_branch
from .durable import fsync_dir, write_all
from .entries import (
    Entry,
    EntryType,
    FileChangesFields,
    KeepFields,
    RevertFields,
    check_fields,
    encode,
    make_header,
    new_entry_id,
)
from .errors import SessionBusy, SessionClosed, SessionLocked, UnknownEntry
from .filelock import try_lock
from .offsets import OffsetIndex
from .replay import newest_compaction, resumed_at_tip, transcript, transcript_at_tip
from .tree import SessionTree
from .usage_totals import UsageTotals

_T = TypeVar("_T")
Listener = Callable[[Event], Awaitable[None]]
Following = Callable[[Message], Sequence[Message]]
"""The messages already in the record after a given one (``Harness.messages_after``)."""


class _Taken:
    """The ids a batch may not use: the file's and the batch's own so far."""

    def __init__(self, file: dict[str, Entry], batch: set[str]) -> None:
        self._file, self._batch = file, batch

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self._file or entry_id in self._batch


def new_session_id() -> str:
    """Sortable by creation time and unique: ``20250131-142501-1a2b3c4d``."""
    return f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(4)}"


def read_tree(path: Path | str) -> SessionTree:
    """Read and check a whole session file without locking it (readers never need to)."""
    return SessionTree.read(Path(path))


def _lock(fd: int, path: Path) -> None:
    try:
        locked = try_lock(fd)
    except OSError:
        os.close(fd)
        raise
    if not locked:
        os.close(fd)
        raise SessionLocked(path)


class SessionLog:
    """An open, locked, writable session. Build it with ``create`` or ``open``."""

    def __init__(self, tree: SessionTree, fd: int, index: OffsetIndex | None = None) -> None:
        self._tree = tree
        self._fd: int | None = fd
        self._index = index
        """The file's offset index, a row appended with each entry (``offsets.py``)."""
        self._write_lock = threading.Lock()
        self._order: asyncio.Lock | None = None
        self._broken: str | None = None
        self._unsynced_name: Path | None = None  # the folder, until the first append syncs it
        self.running = False

    @classmethod
    def create(cls, directory: Path | str, cwd: str, session_id: str | None = None) -> SessionLog:
        """A new session file in ``directory`` (made if needed), locked, its header
        written; the header and the file's name are synced by the first append."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        session_id = session_id or new_session_id()
        path = directory / f"{session_id}.jsonl"
        header = make_header(session_id, cwd)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o600)
        _lock(fd, path)
        line = encode(header)
        try:
            write_all(fd, line)
        except BaseException:
            os.close(fd)
            raise
        log = cls(SessionTree(path, header), fd, OffsetIndex.new(path, line))
        log._unsynced_name = directory
        return log

    @classmethod
    def open(cls, path: Path | str) -> SessionLog:
        """Lock an existing session for writing, then read and check it in full."""
        path = Path(path)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        _lock(fd, path)
        try:
            tree = SessionTree.read(path, index=True)  # only the writer keeps the index
        except BaseException:
            os.close(fd)
            raise
        # A history the open left unread has no rows to give, and opens fast as it is.
        covered = tree.covered
        index = OffsetIndex.attach(path, tree.entries, covered) if covered is not None else None
        return cls(tree, fd, index)

    @property
    def path(self) -> Path:
        return self._tree.path

    @property
    def session_id(self) -> str:
        return str(self._tree.header["id"])

    @property
    def header(self) -> dict[str, Any]:
        return dict(self._tree.header)

    @property
    def tree(self) -> SessionTree:
        """The live tree. Read it; do not change it (only this log appends)."""
        return self._tree

    @property
    def tip(self) -> str | None:
        return self._tree.tip

    def entries(self) -> list[Entry]:
        return list(self._tree.entries)

    def entries_of(self, kinds: tuple[EntryType, ...]) -> list[Entry]:
        """The entries of ``kinds`` (not ``message``), in file order, without reading a
        history the open left unread (``SessionTree.of_kinds``)."""
        return self._tree.of_kinds(kinds)

    def usage_totals(self) -> UsageTotals:
        """What the file's entries have used (``UsageTotals.of`` them all; what those the
        offset index gave used, it recorded: ``offsets.py``). While the
        history before the newest compaction is unread (``SessionTree.read``), the
        ``usageBefore`` that compaction recorded stands for it, and only what follows is
        summed; a record that is not one reads the history and sums it all."""
        held = self._tree.held
        covered = self._tree.covered
        if covered is not None:  # what the entries the offset index gave used is in it
            summed = UsageTotals()
            summed.add_totals(covered.spent)
            summed.add_entries(held[covered.entries :])
            return summed
        if self._tree.unread and (position := newest_compaction(held)) is not None:
            totals = UsageTotals.recorded(held[position].get("usageBefore"))
            if totals is not None:
                totals.add_entries(held[position:])
                return totals
        return UsageTotals.of(self._tree.entries)

    def resumed(self) -> Sequence[Message]:
        """The transcript at the tip as an open hands it to the Harness
        (``replay.resumed_at_tip``): messages still in the file stay there until read."""
        return resumed_at_tip(self._tree)

    def replay(self, entry_id: str | None = None) -> list[Message]:
        """The transcript at the tip, or at ``entry_id`` (an abandoned attempt's last entry)."""
        if entry_id is None:
            return transcript_at_tip(self._tree)
        if entry_id not in self._tree.by_id:
            raise UnknownEntry(entry_id, self.path)
        branch = self._tree.path_to(entry_id)
        return transcript(
            self.path, branch, only_messages=self._tree.count("message") == len(self._tree)
        )

    # -- appending -----------------------------------------------------------------

    def append_sync(
        self, kind: EntryType, fields: Mapping[str, Any], parent: str | None = None
    ) -> str:
        """Append one entry under ``parent`` (default: the tip); return its id once synced.
        The fields must be those ``entries.ENTRY_FIELDS`` names for ``kind`` (ValueError)."""
        return self.append_many_sync([(kind, fields)], parent)[0]

    def append_many_sync(
        self, items: Sequence[tuple[EntryType, Mapping[str, Any]]], parent: str | None = None
    ) -> list[str]:
        """Append entries that complete together, each the child of the one before (the
        first under ``parent``, default: the tip), with one write and one ``fsync``;
        their ids once all are synced. Every entry is encoded before anything is written,
        so one that JSON cannot hold writes none of them. A crash during the write
        leaves a prefix of them, the last line possibly torn (``repair`` cuts it), and
        nothing about them has been announced yet."""
        with self._write_lock:
            fd = self._writable()
            parent_id = self._tree.tip if parent is None else parent
            if parent is not None:
                self._require(parent)
            taken: set[str] = set()
            lines: list[bytes] = []
            for kind, fields in items:
                check_fields(kind, fields)
                entry_id = new_entry_id(_Taken(self._tree.by_id, taken))
                taken.add(entry_id)
                entry: Entry = {
                    "type": kind,
                    "id": entry_id,
                    "parentId": parent_id,
                    "timestamp": now_ms(),
                    **fields,
                }
                lines.append(encode(entry))
                parent_id = entry_id
            try:
                write_all(fd, b"".join(lines))
                os.fsync(fd)  # a new file's header too
                if self._unsynced_name is not None:
                    fsync_dir(self._unsynced_name)
                    self._unsynced_name = None
            except BaseException as error:
                self._broken = f"an earlier write failed ({error!r})"
                raise
            entries = [jsonio.loads(line) for line in lines]
            for entry in entries:
                self._tree.add(entry)
            if self._index is not None:
                self._index.add(lines, entries)
            return [str(entry["id"]) for entry in entries]

    async def append(
        self, kind: EntryType, fields: Mapping[str, Any], parent: str | None = None
    ) -> str:
        """``append_sync`` off the event loop, in call order."""
        return await self._in_order(self.append_sync, kind, fields, parent)

    async def _in_order(self, call: Callable[..., _T], *args: Any) -> _T:
        """``call(*args)`` in a worker thread, after every append asked for before it."""
        if self._order is None:
            self._order = asyncio.Lock()
        async with self._order:
            return await anyio.to_thread.run_sync(call, *args)

    @property
    def blobs(self) -> Path:
        """Where this session's large images are stored (``<id>.blobs``)."""
        return blob_dir(self.path)

    def load_image(self, block: ImageBlock) -> str | None:
        """A stored image's base64 bytes, or None when its blob is missing or damaged."""
        return load_blob(self.blobs, block)

    async def append_message(self, message: Message) -> str:
        if images_of(message):
            message = await anyio.to_thread.run_sync(stored_message, self.blobs, message)
        return await self.append("message", {"message": _role_first(message)})

    async def append_messages(self, messages: Sequence[Message]) -> list[str]:
        """Messages that completed together, one ``fsync`` for all (``append_many_sync``);
        their large images are stored as blobs first, as ``append_message`` does."""
        if any(images_of(message) for message in messages):
            messages = await anyio.to_thread.run_sync(self._stored_all, messages)
        items: list[tuple[EntryType, Mapping[str, Any]]] = [
            ("message", {"message": _role_first(message)}) for message in messages
        ]
        return await self._in_order(self.append_many_sync, items)

    def _stored_all(self, messages: Sequence[Message]) -> list[Message]:
        return [stored_message(self.blobs, message) for message in messages]

    def append_message_sync(self, message: Message) -> str:
        message = stored_message(self.blobs, message)
        return self.append_sync("message", {"message": _role_first(message)})

    async def append_model_change(self, api: str, model_id: str) -> str:
        return await self.append("modelChange", {"api": api, "modelId": model_id})

    async def set_label(self, entry_id: str, label: str | None) -> str:
        """Label an entry (``None`` clears it). The label is an entry of its own."""
        self._require(entry_id)
        return await self.append("label", {"targetId": entry_id, "label": label})

    async def set_name(self, name: str) -> str:
        """Name the session; the newest name is its title."""
        return await self.append("sessionInfo", {"name": name})

    async def append_file_changes(self, fields: FileChangesFields) -> str:
        """What one tool call changed in the workspace (``crank.workspace.changes``)."""
        return await self.append("fileChanges", fields)

    async def append_revert(self, fields: RevertFields) -> str:
        """What a revert put back, with its own before and after images."""
        return await self.append("revert", fields)

    async def append_keep(self, fields: KeepFields) -> str:
        """Files of a run the user accepted as they are (``crank/keep``)."""
        return await self.append("keep", fields)

    async def append_compaction(
        self, summary: str, first_kept_id: str, tokens_before: int, *, usage: Usage | None = None
    ) -> str:
        """Record a compaction (its policy lives elsewhere); the cut must be on this branch.
        ``usage`` is what the summary call cost, kept so the session's totals include it;
        ``usageBefore``, what every entry before it used, is summed in turn with the other
        appends (none is missed), so an open can leave that history unread."""
        self._require(first_kept_id)
        if all(entry["id"] != first_kept_id for entry in self._tree.path_to(self._tree.tip)):
            raise UnknownEntry(first_kept_id, self.path)
        fields: dict[str, Any] = {
            "summary": summary,
            "firstKeptId": first_kept_id,
            "tokensBefore": tokens_before,
        }
        if usage is not None:
            fields["usage"] = usage
        return await self._in_order(self._append_compaction_sync, fields)

    def _append_compaction_sync(self, fields: dict[str, Any]) -> str:
        fields["usageBefore"] = self.usage_totals().as_usage()
        forked = self._tree.forked()  # known: the cut was looked for on the whole path
        if forked is not None:
            fields["forkedBefore"] = forked
        return self.append_sync("compaction", fields)

    async def branch_to(self, entry_id: str, *, summarize: Model | None = None) -> str:
        """Go back: append one ``branch`` entry whose parent is ``entry_id``; return the tip.

        With ``summarize``, the messages of the attempt being left (after the fork) are
        first summarised by that model and the summary is appended as a ``branchSummary``
        on the new branch. An unknown id, an active run or a failed summary write nothing.
        """
        self._check_can_branch(entry_id)
        if summarize is None:
            return await self.append("branch", {}, parent=entry_id)
        old_tip = self._tree.tip
        left = abandoned_messages(
            self.path, self._tree.path_to(old_tip), self._tree.path_to(entry_id)
        )
        summary = await summarize_branch(summarize, left) if left else None
        self._check_can_branch(entry_id)
        branch_id = await self.append("branch", {}, parent=entry_id)
        if summary is None:
            return branch_id
        fields = {"summary": summary.text, "fromId": old_tip, "usage": summary.usage}
        return await self.append("branchSummary", fields, parent=branch_id)

    def _check_can_branch(self, entry_id: str) -> None:
        if self.running:
            raise SessionBusy("going back to an earlier entry")
        self._require(entry_id)

    def _require(self, entry_id: str) -> None:
        if entry_id not in self._tree.by_id:
            raise UnknownEntry(entry_id, self.path)

    def _writable(self) -> int:
        if self._broken is not None:
            raise SessionClosed(f"session {self.path} refuses appends: {self._broken}")
        if self._fd is None:
            raise SessionClosed(f"session {self.path} is closed")
        return self._fd

    # -- the Harness listener ----------------------------------------------------

    def listener(self, following: Following | None = None) -> Listener:
        """A Harness listener: saves every finished message and tells the event its id.

        On ``message_end`` the message is appended and synced before the listener
        returns, and ``event["entryId"]`` is set, so whoever hears the event next can
        trust that the entry is on disk. A failed write raises and ends the run loudly.
        ``agent_start`` / ``agent_settled`` mark a run as active, which refuses branching.

        ``following`` (the Harness's ``messages_after``) names the messages already in
        the record after the one just finished: the loop puts messages that complete
        together (a failed reply and the results of the calls it did not run, a batch
        of steering messages) into the record before the first of their ``message_end``
        events. They are saved with it, one ``fsync`` for the group, and each one's own
        ``message_end`` then only gets its id: still on disk before it is announced.
        """
        saved_ahead: list[tuple[Message, str]] = []

        async def on_event(event: Event) -> None:
            if event["type"] == "message_end":
                message = event["message"]
                if saved_ahead and saved_ahead[0][0] is message:
                    event["entryId"] = saved_ahead.pop(0)[1]
                    return
                saved_ahead.clear()
                group = [message, *following(message)] if following is not None else [message]
                ids = await self.append_messages(group)
                saved_ahead.extend(zip(group[1:], ids[1:], strict=True))
                event["entryId"] = ids[0]
            elif event["type"] == "agent_start":
                self.running = True
            elif event["type"] == "agent_settled":
                self.running = False

        return on_event

    def close(self) -> None:
        """Release the lock. Idempotent; appends after this raise ``SessionClosed``."""
        with self._write_lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            if self._index is not None:
                self._index.close()
                self._index = None

    def __enter__(self) -> SessionLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _role_first(message: Message) -> dict[str, Any]:
    """The same message with ``role`` as its first key, so a byte scan can see it."""
    return {"role": message["role"], **message}
