"""A run's changes to the workspace, recorded per tool call, listed and taken back.

``RunChanges.wrap`` puts a hook around every tool that changes files (``mutates``):
once the call is allowed to act, a snapshot of what it may touch (``edit``/``write``:
the file they name; a command, or any other mutating tool: the whole workspace, see
``crank.tools.snapshot``), the before images kept in the session's content store
(``crank.session.fileblobs``); after the call, a second snapshot, and what differs is
appended to the session as one ``fileChanges`` entry (``runId``, ``toolCallId``,
``files``). The log is the record: ``changes`` and ``revert`` read it, so a run's
changes can be listed and taken back after a restart too. Recording never fails a
tool: a recording problem is logged and the tool's result goes on.

``revert`` puts files back as they were before a run (or before the earliest of
several): a file that is no longer what the run left is a conflict unless ``force``;
an open buffer is changed through the editor (``apply_edit``, saved like any agent
edit, so the editor's undo works); a closed file is replaced atomically (temporary
file, rename). Each file is judged and applied alone, and every refusal is a
per-file conflict with its reason. The revert is itself a ``revert`` entry, with its
own id (``revert-<hex>``) and its own before/after images, so it can be reverted.

``keep`` is the other answer to a run's change: the user accepts it. It touches no
file; it appends a ``keep`` entry (``runId``, ``paths``), so the run's list says
``kept`` for those files after a reload and in every client, a revert of the whole run
leaves them alone, and only a revert naming one takes it back (which ends the keep).
Each file of a list also says how many lines its change added and removed
(``linesAdded``/``linesRemoved``), counted from the kept before and after contents.

The order is ask, then snapshot, then run: every tool that changes files asks
(``ToolContext.approve``) before it touches anything, and ``snapshot_after`` wraps that
question so the call's first snapshot is taken when the answer is yes (the mode or a
rule answering counts too). What the user changes while a question is open is theirs,
not the call's. A call that is refused changes nothing and records nothing; a mutating
tool that never asks is not recorded (every one Crank has asks: edit, write, bash and
the MCP tools that are not trusted read-only).
"""

from __future__ import annotations

import contextlib
import difflib
import logging
import os
import secrets
import stat
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread

from crank.agent.model import AbortSignal
from crank.agent.tools import OnUpdate, Tool, ToolCall, ToolOutput
from crank.session import SessionLog, fileblobs
from crank.session.entries import EntryType, FileChangesFields, RevertFields
from crank.tools import ApprovalRequest, Approve, Decision, ToolContext
from crank.tools.context import EditNotSaved, EditRefused, absolute
from crank.tools.snapshot import (
    SAVE_LIMIT,
    Change,
    ChangeStatus,
    FileState,
    Scanner,
    Snapshot,
    TooLarge,
    sha256_hex,
)
from crank.tools.snapshot import changes as diff_snapshots
from crank.tools.textfile import write_atomic

from .errors import invalid_params

log = logging.getLogger(__name__)

NAMED_TARGET = {"edit": "path", "write": "path"}
"""Tools that change exactly the file their argument names: only it is snapshot."""
REVERT_PREFIX = "revert-"
CHANGE_KINDS: tuple[EntryType, ...] = ("fileChanges", "revert", "keep")
"""The entries every answer here is made of: listing reads only these
(``SessionLog.entries_of``), so a compacted session's history stays unread."""
DIFF_LINES = 400
"""A file's +/- counts are a line diff's (``difflib``) over what differs between the
common first and last lines, when that middle has up to this many lines (both sides
together: difflib's worst case, many repeated lines, grows with the cube, 0.3 s here at
400); above it, a count of the lines one side has more of than the other (linear; the
same figures unless lines moved, which it counts as neither)."""
COUNTS_KEPT = 4096
"""How many (before, after) pairs' counts a workspace remembers (content hashes: a
pair's counts never change, so every list after the first reads them for free)."""

LineCounts = tuple[int, int] | None
"""A change's (added, removed) lines, or None when they cannot be counted."""

_T = TypeVar("_T")
_Before = int | Snapshot
"""What a recorded call is measured from: a command's mark in the scanner's journal
(``Scanner.mark``), or the snapshot of the files an edit or a write names."""


_SNAPSHOT_NOW: ContextVar[Callable[[], Awaitable[None]] | None] = ContextVar(
    "crank_changes_snapshot_now", default=None
)
"""The recorded call running in this task: takes its first snapshot (set by the
wrapper around a mutating tool, called by ``snapshot_after`` on a yes)."""


def snapshot_after(approve: Approve) -> Approve:
    """``approve`` whose yes first takes the asking call's snapshot (when the call is
    recorded): the snapshot a call's change is measured from is taken after its
    question is answered, never before, so an edit the user makes while it is open is
    not counted as the call's. A second yes for the same call (a path outside the
    workspace, then the change itself) takes it again: the last one counts."""

    async def ask(request: ApprovalRequest) -> Decision:
        decision = await approve(request)
        take = _SNAPSHOT_NOW.get()
        if decision.allowed and take is not None:
            await take()
        return decision

    return ask


def new_revert_id() -> str:
    """A revert's id, the ``runId`` of its own changes (so it can be reverted too)."""
    return f"{REVERT_PREFIX}{secrets.token_hex(4)}"


# -- the entries ---------------------------------------------------------------------------


def _state_json(state: FileState | None) -> dict[str, Any] | None:
    if state is None:
        return None
    out: dict[str, Any] = {"saved": state.saved}
    if state.sha256 is not None:
        out["sha256"] = state.sha256
    if state.why is not None:
        out["why"] = state.why
    if state.folder:
        out["folder"] = True
    return out


def _file_json(change: Change) -> dict[str, Any]:
    return {
        "path": change.path,
        "status": change.status,
        "before": _state_json(change.before),
        "after": _state_json(change.after),
    }


@dataclass
class Net:
    """One path over a run (or several): its state before the first change, after the
    last, and the tool calls that changed it."""

    path: str
    existed: bool
    before: dict[str, Any] | None
    exists: bool = False
    after: dict[str, Any] | None = None
    by_tool: list[str] = field(default_factory=list)

    @property
    def status(self) -> ChangeStatus | None:
        if self.existed and self.exists:
            same = self.before and self.after and self.before.get("sha256")
            if same and self.before and self.after and same == self.after.get("sha256"):
                return None  # changed and changed back
            return "modified"
        if self.exists:
            return "added"
        return "deleted" if self.existed else None

    def problem(self) -> str | None:
        """Why this path cannot be put back, or None."""
        for side, state, needed in (
            ("before", self.before, self.existed),
            ("after", self.after, self.exists),
        ):
            if not needed or state is None:
                continue
            if state.get("folder"):
                return f"{state.get('why') or 'a folder'}: not restorable"
            if side == "before" and not state.get("saved"):
                return f"{state.get('why') or 'its content was not kept'}: not restorable"
            if side == "after" and "sha256" not in state:
                return f"{state.get('why') or 'its content was not hashed'}: not restorable"
        return None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "status": self.status,
            "byTool": self.by_tool,
            "restorable": self.problem() is None,
        }
        if self.existed and self.before and "sha256" in self.before:
            out["before"] = self.before["sha256"]
        if self.exists and self.after and "sha256" in self.after:
            out["after"] = self.after["sha256"]
        problem = self.problem()
        if problem is not None:
            out["reason"] = problem
        return out


def net_changes(entries: Iterable[dict[str, Any]], runs: Sequence[str] | None) -> dict[str, Net]:
    """Every path the runs (all of them: ``None``) changed, in the log's order: the
    state before the earliest change and after the latest."""
    wanted = None if runs is None else set(runs)
    found: dict[str, Net] = {}
    for entry in entries:
        if entry.get("type") not in ("fileChanges", "revert"):
            continue
        if wanted is not None and entry.get("runId") not in wanted:
            continue
        call = entry.get("toolCallId")
        for record in entry.get("files") or ():
            path = record["path"]
            net = found.get(path)
            if net is None:
                net = found[path] = Net(path, record["status"] != "added", record.get("before"))
            net.exists = record["status"] != "deleted"
            net.after = record.get("after")
            if isinstance(call, str) and call not in net.by_tool:
                net.by_tool.append(call)
    return {path: net for path, net in found.items() if net.status is not None}


def run_ids(entries: Iterable[dict[str, Any]]) -> list[str]:
    """The runs (and reverts) that changed something, oldest first."""
    seen: list[str] = []
    for entry in entries:
        run = entry.get("runId")
        kind = entry.get("type")
        if kind in ("fileChanges", "revert") and isinstance(run, str) and run not in seen:
            seen.append(run)
    return seen


def run_files(
    entries: Sequence[dict[str, Any]],
    run: str,
    counts: Callable[[Net], LineCounts] | None = None,
) -> list[dict[str, Any]]:
    """One run's files as ``crank/changes`` lists them: a reverted one with
    ``revertedBy``, a kept one with ``kept``, each with its +/- line counts when
    ``counts`` can tell them."""
    undone = reverted_paths(entries, run)
    kept = kept_paths(entries, [run])
    out: list[dict[str, Any]] = []
    for net in net_changes(entries, [run]).values():
        item = with_counts(net, counts)
        if net.path in undone:
            item["revertedBy"] = undone[net.path]
        elif net.path in kept:
            item["kept"] = True
        out.append(item)
    return out


def with_counts(net: Net, counts: Callable[[Net], LineCounts] | None) -> dict[str, Any]:
    """``net`` as ``crank/changes`` lists it, with ``linesAdded``/``linesRemoved`` when
    they can be counted."""
    item = net.to_json()
    found = counts(net) if counts is not None else None
    if found is not None:
        item["linesAdded"], item["linesRemoved"] = found
    return item


def kept_paths(entries: Iterable[dict[str, Any]], runs: Sequence[str]) -> set[str]:
    """The paths of ``runs`` the user kept (``keep`` entries); a later revert of one of
    those runs that put a kept path back ends its keep."""
    wanted = set(runs)
    kept: set[str] = set()
    for entry in entries:
        kind = entry.get("type")
        if kind == "keep" and entry.get("runId") in wanted:
            kept.update(p for p in entry.get("paths") or () if isinstance(p, str))
        elif kind == "revert" and wanted.intersection(entry.get("reverts") or ()):
            kept.difference_update(entry.get("reverted") or ())
    return kept


def line_counts(before: bytes, after: bytes) -> tuple[int, int]:
    """(added, removed): the lines a change from ``before`` to ``after`` added and
    removed, as a line diff counts them (``DIFF_LINES`` bounds the diff)."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    end = 0
    while end < min(len(old), len(new)) - start and old[-1 - end] == new[-1 - end]:
        end += 1
    old, new = old[start : len(old) - end], new[start : len(new) - end]
    if len(old) + len(new) <= DIFF_LINES:
        added = removed = 0
        matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag != "equal":
                removed += i2 - i1
                added += j2 - j1
        return added, removed
    more = Counter(new)
    more.subtract(Counter(old))
    return sum(n for n in more.values() if n > 0), sum(-n for n in more.values() if n < 0)


def reverted_paths(entries: Iterable[dict[str, Any]], run: str) -> dict[str, str]:
    """The paths of ``run`` that a revert put back, each with the newest such revert's
    id; a path a later revert of that revert brought back again is not listed."""
    undone: dict[str, str] = {}
    for entry in entries:
        if entry.get("type") != "revert":
            continue
        reverts = entry.get("reverts") or ()
        revert_id = entry.get("runId")
        for path in entry.get("reverted") or ():
            if run in reverts and isinstance(revert_id, str):
                undone[path] = revert_id
            elif undone.get(path) in reverts:
                del undone[path]
    return undone


# -- recording -----------------------------------------------------------------------------


class RunChanges:
    """The recorder and the revert for one workspace. ``session_log`` and ``run_id``
    say where a change is recorded (no log or no run: nothing is recorded); ``note``
    takes a line for the user's log."""

    def __init__(
        self,
        ctx: ToolContext,
        session_log: Callable[[], SessionLog | None],
        run_id: Callable[[], str | None],
        note: Callable[[str], None],
        *,
        limit: int = SAVE_LIMIT,
    ) -> None:
        self.ctx = ctx
        self.root = ctx.root
        self._log = session_log
        self._run_id = run_id
        self._note = note
        self.limit = limit
        self._scanner: Scanner | None = None
        self._folder: Path | None = None
        self._store: fileblobs.FileStore | None = None
        self._notes: list[str] = []
        self._too_large_said = False
        self._feed_said = False
        self._counts: dict[tuple[str | None, str | None], LineCounts] = {}

    def scanner(self, session: SessionLog) -> Scanner:
        """The scanner saving into ``session``'s content store (a new session starts
        a new one: what the old one remembers is in the old session's folder)."""
        folder = session.blobs
        if self._scanner is None or self._folder != folder:
            if self._scanner is not None:
                self._scanner.close()
            self._store = fileblobs.FileStore(folder)
            self._scanner = Scanner(self.root, self._store, limit=self.limit)
            self._folder = folder
        return self._scanner

    def wrap(self, tools: Sequence[Tool]) -> list[Tool]:
        """The tools, each that changes files recorded around its execution."""
        return [
            replace(tool, execute=self._recorded(tool)) if tool.mutates else tool for tool in tools
        ]

    def _targets(self, tool: Tool, call: ToolCall) -> list[str] | None:
        key = NAMED_TARGET.get(tool.name)
        if key is None:
            return None
        raw = call.arguments.get(key)
        if not isinstance(raw, str) or not raw.strip():
            return []
        path = absolute(self.root, raw)
        if not path.is_relative_to(self.root) or path == self.root:
            return []  # outside the workspace: not the workspace's change to record
        return [path.relative_to(self.root).as_posix()]

    def _recorded(self, tool: Tool) -> Any:
        inner = tool.execute

        async def execute(
            call: ToolCall, signal: AbortSignal, on_update: OnUpdate
        ) -> ToolOutput | str:
            session, run = self._log(), self._run_id()
            if session is None or run is None:
                return await inner(call, signal, on_update)
            targets = self._targets(tool, call)
            scanner = self.scanner(session)
            taken: list[_Before] = []

            async def snapshot_now() -> None:
                if taken:
                    await self._forget(scanner, taken.pop())
                before = await self._before(scanner, targets)
                if before is not None:
                    taken.append(before)

            token = _SNAPSHOT_NOW.set(snapshot_now)
            try:
                return await inner(call, signal, on_update)
            finally:
                _SNAPSHOT_NOW.reset(token)
                if taken:
                    found = await self._after(scanner, targets, taken[0])
                    if found is not None:
                        await self._record(session, run, call.id, found)

        return execute

    async def _before(self, scanner: Scanner, targets: list[str] | None) -> _Before | None:
        """A command's mark (the whole workspace), or the named files' snapshot."""
        if targets is None:
            return await self._guarded(scanner, scanner.mark)
        return await self._guarded(scanner, lambda: scanner.scan_paths(targets))

    async def _after(
        self, scanner: Scanner, targets: list[str] | None, before: _Before
    ) -> list[Change] | None:
        if isinstance(before, int):
            return await self._guarded(scanner, lambda: scanner.since(before))
        after = await self._guarded(scanner, lambda: scanner.scan_paths(targets or []))
        return None if after is None else diff_snapshots(before, after)

    @staticmethod
    async def _forget(scanner: Scanner, before: _Before) -> None:
        if isinstance(before, int):
            await anyio.to_thread.run_sync(scanner.release, before)

    async def _guarded(self, scanner: Scanner, scan: Callable[[], _T]) -> _T | None:
        """``scan`` in a worker thread; a problem is said, never raised (recording
        must not fail the tool)."""
        try:
            return await anyio.to_thread.run_sync(scan)
        except TooLarge as exc:
            if not self._too_large_said:
                self._too_large_said = True
                self._note(f"Crank: {exc}, so what commands change is not recorded (edits are)")
            return None
        except Exception as exc:  # recording must never fail the tool
            self._note(f"Crank: the workspace could not be snapshot for the run's changes: {exc}")
            return None
        finally:
            if scanner.feed_problem is not None and not self._feed_said:
                self._feed_said = True
                log.info(
                    "the change feed is off (%s): each command's changes are found by "
                    "walking the workspace",
                    scanner.feed_problem,
                )

    def close(self) -> None:
        """Release the change feed (the workspace closes)."""
        if self._scanner is not None:
            self._scanner.close()

    async def _record(
        self, session: SessionLog, run: str, call_id: str | None, found: list[Change]
    ) -> None:
        if not found:
            return
        fields: FileChangesFields = {
            "runId": run,
            "toolCallId": call_id,
            "files": [_file_json(c) for c in found],
        }
        try:
            await anyio.to_thread.run_sync(self._make_durable, session, found)
            await session.append_file_changes(fields)
        except Exception as exc:
            self._note(f"Crank: the run's changes could not be recorded: {exc}")

    def _make_durable(self, session: SessionLog, found: list[Change]) -> None:
        """The contents the entry about to be appended names, synced first."""
        hashes = [
            state.sha256
            for change in found
            for state in (change.before, change.after)
            if state is not None and state.saved and state.sha256 is not None
        ]
        if hashes:
            self.scanner(session)
            assert self._store is not None
            self._store.make_durable(hashes)

    # -- listing -------------------------------------------------------------------------

    def list(self, session: SessionLog | None, run: str | None) -> dict[str, Any]:
        """``crank/changes``: one run's files, or the whole session's, then (additive)
        each run's own list in ``runs`` so a client can show every run's changes after
        a reload with one request. A run's file that a revert put back (and no revert
        of that revert brought again) says so in ``revertedBy``."""
        if session is None:
            return {"files": []} if run is not None else {"files": [], "runs": []}
        entries = session.entries_of(CHANGE_KINDS)

        def counts(net: Net) -> LineCounts:
            return self.line_counts(session, net)

        if run is not None:
            return {"files": run_files(entries, run, counts)}
        nets = net_changes(entries, None)
        runs = [
            {"runId": one, "files": run_files(entries, one, counts)}
            for one in run_ids(entries)
            if not one.startswith(REVERT_PREFIX)
        ]
        return {"files": [with_counts(net, counts) for net in nets.values()], "runs": runs}

    def line_counts(self, session: SessionLog, net: Net) -> LineCounts:
        """How many lines ``net``'s change added and removed, from the contents kept
        beside the session; None when a side it needs was not kept (binary, too large,
        ignored) or cannot be read. Remembered per pair of hashes."""
        sides: list[str | None] = []
        for needed, state in ((net.existed, net.before), (net.exists, net.after)):
            if not needed:
                sides.append(None)
            elif state is None or not state.get("saved") or "sha256" not in state:
                return None
            else:
                sides.append(str(state["sha256"]))
        key = (sides[0], sides[1])
        if key in self._counts:
            return self._counts[key]
        self.scanner(session)
        assert self._store is not None
        contents: list[bytes] = []
        for sha in key:
            data = b"" if sha is None else self._store.get(sha)
            if isinstance(data, str):
                return None  # gone: not remembered, it may be a passing read error
            contents.append(data)
        found = line_counts(contents[0], contents[1])
        if len(self._counts) >= COUNTS_KEPT:
            self._counts.clear()
        self._counts[key] = found
        return found

    def content(self, session: SessionLog | None, sha256: object) -> dict[str, Any]:
        """``crank/fileContent``: a kept before or after image, as text, for a client's
        diff view. Only a hash this session's change entries name is ever read."""
        if not isinstance(sha256, str) or not fileblobs.is_hash(sha256):
            raise invalid_params("sha256", "expected 64 lowercase hex digits")
        named = session is not None and any(
            isinstance(state, dict) and state.get("sha256") == sha256 and state.get("saved")
            for entry in session.entries_of(CHANGE_KINDS)
            if entry.get("type") in ("fileChanges", "revert")
            for record in entry.get("files") or ()
            for state in (record.get("before"), record.get("after"))
        )
        if session is None or not named:
            raise invalid_params("sha256", "no kept file content of this session has this hash")
        self.scanner(session)
        assert self._store is not None
        data = self._store.get(sha256)
        if isinstance(data, str):
            raise invalid_params("sha256", f"the content cannot be had: {data}")
        return {"sha256": sha256, "text": data.decode("utf-8", "replace")}

    def last_run(self, session: SessionLog | None) -> str | None:
        """What ``/undo`` takes back: the newest run that changed a file and that no
        revert has taken back yet (a revert is not a run: ``/undo`` twice goes further
        back instead of redoing)."""
        if session is None:
            return None
        entries = session.entries_of(CHANGE_KINDS)
        taken = {
            run
            for entry in entries
            if entry.get("type") == "revert"
            for run in entry.get("reverts") or ()
        }
        runs = [
            run
            for run in run_ids(entries)
            if not run.startswith(REVERT_PREFIX)
            and run not in taken
            and not set(net_changes(entries, [run])) <= kept_paths(entries, [run])
        ]
        return runs[-1] if runs else None

    # -- keeping -------------------------------------------------------------------------

    async def keep(
        self, session: SessionLog | None, run: str, paths: Sequence[str] | None
    ) -> dict[str, Any]:
        """``crank/keep``: the user accepts the run's change to ``paths`` (all its files
        still changed: ``None``). Nothing on disk changes; a ``keep`` entry records the
        newly kept ones (a file kept already is answered as kept again, not recorded
        twice). A path the run did not change, or one a revert put back, is a per-file
        conflict; a run with no recorded change is refused (-32602) like ``revert``."""
        if session is None:
            raise invalid_params("runId", "this session has no log yet: nothing to keep")
        entries = session.entries()
        if run not in run_ids(entries):
            raise invalid_params(
                "runId", f"no changes of run {run} are recorded in session {session.session_id}"
            )
        nets = net_changes(entries, [run])
        undone = reverted_paths(entries, run)
        already = kept_paths(entries, [run])
        kept: list[str] = []
        conflicts: list[dict[str, str]] = []
        for path in paths if paths is not None else [p for p in nets if p not in undone]:
            if path not in nets:
                conflicts.append({"path": path, "reason": "not changed by this run"})
            elif path in undone:
                conflicts.append(
                    {
                        "path": path,
                        "reason": f"put back by {undone[path]}: there is no change to keep "
                        "(redo it first)",
                    }
                )
            elif path not in kept:
                kept.append(path)
        new = [path for path in kept if path not in already]
        if new:
            await session.append_keep({"runId": run, "paths": new})
        return {"kept": kept, "conflicts": conflicts}

    # -- taking back ---------------------------------------------------------------------

    async def revert(
        self,
        session: SessionLog | None,
        runs: Sequence[str],
        paths: Sequence[str] | None,
        force: bool,
    ) -> dict[str, Any]:
        """``crank/revert``: see the module docstring."""
        if session is None:
            raise invalid_params("runId", "this session has no log yet: nothing to revert")
        entries = session.entries()
        known = run_ids(entries)
        for run in runs:
            if run not in known:
                raise invalid_params(
                    "runId", f"no changes of run {run} are recorded in session {session.session_id}"
                )
        nets = net_changes(entries, runs)
        conflicts: list[dict[str, str]] = []
        chosen: list[Net] = []
        kept = kept_paths(entries, runs) if paths is None else set()
        for path in paths if paths is not None else [p for p in nets if p not in kept]:
            net = nets.get(path)
            if net is None:
                conflicts.append({"path": path, "reason": "not changed by this run"})
            else:
                chosen.append(net)
        scanner = self.scanner(session)
        plans: list[tuple[Net, bytes | None]] = []
        for net in chosen:
            outcome = await anyio.to_thread.run_sync(self._judge, session, net, force)
            if isinstance(outcome, str):
                conflicts.append({"path": net.path, "reason": outcome})
            else:
                plans.append((net, outcome[0]))
        files = [net.path for net, _ in plans if not net.path.endswith("/")]
        before = await anyio.to_thread.run_sync(scanner.scan_paths, files)
        reverted: list[str] = []
        for net, data in plans:
            problem = await self._apply(net.path, data)
            if problem is None:
                reverted.append(net.path)
            else:
                conflicts.append({"path": net.path, "reason": problem})
        after = await anyio.to_thread.run_sync(scanner.scan_paths, files)
        found = diff_snapshots(before, after)
        revert_id = new_revert_id()
        fields: RevertFields = {
            "runId": revert_id,
            "reverts": list(runs),
            "files": [_file_json(change) for change in found],
            "reverted": reverted,
            "conflicts": conflicts,
        }
        await anyio.to_thread.run_sync(self._make_durable, session, found)
        await session.append_revert(fields)
        if reverted:
            self._notes.append(
                f"[The user took back what {', '.join(runs)} changed in {', '.join(reverted)}: "
                "those files are as they were before it. Read them again before relying on "
                "them.]"
            )
        return {"reverted": reverted, "conflicts": conflicts, "revertId": revert_id}

    def take_notes(self) -> str:
        """What the model is told with the next prompt about reverts since the last one
        (so it does not build on changes that were taken back); empty when none."""
        notes, self._notes = self._notes, []
        return "\n".join(notes)

    def _judge(self, session: SessionLog, net: Net, force: bool) -> tuple[bytes | None] | str:
        """The bytes ``net.path`` goes back to (None: it is deleted), or why not."""
        problem = self._outside(net.path)
        if problem is not None:
            return problem
        problem = net.problem()
        if problem is not None:
            return problem
        target = self.root / net.path
        try:
            info: os.stat_result | None = os.lstat(target)
        except FileNotFoundError:
            info = None
        except OSError as exc:
            return f"cannot be read ({exc.strerror or exc})"
        current: str | None = None
        if info is not None:
            if stat.S_ISDIR(info.st_mode):
                return "is now a folder; nothing was changed"
            if not stat.S_ISREG(info.st_mode):
                return "is now not a regular file (a link or a device); nothing was changed"
            if info.st_size > self.limit:
                return f"is now larger than {self.limit} bytes; nothing was changed"
            try:
                current = sha256_hex(target.read_bytes())
            except OSError as exc:
                return f"cannot be read ({exc.strerror or exc})"
        expected = net.after.get("sha256") if net.exists and net.after else None
        if current != expected and not force:
            now = "is gone" if current is None else "now differs from what the run left"
            return f"changed since the run ({now}); not overwritten (force: true overwrites it)"
        if not net.existed:
            return (None,)
        assert net.before is not None
        self.scanner(session)
        assert self._store is not None
        data = self._store.get(str(net.before.get("sha256")))
        if isinstance(data, str):
            return f"its content before the run cannot be had: {data}"
        return (data,)

    def _outside(self, relative: str) -> str | None:
        if relative.startswith("/") or ".." in Path(relative).parts:
            return "outside the workspace; nothing was changed"
        parent = (self.root / relative).parent
        with contextlib.suppress(OSError):
            parent = parent.resolve()
        if parent != self.root and not parent.is_relative_to(self.root):
            return "outside the workspace (a folder on its way is a link out); nothing was changed"
        return None

    async def _apply(self, relative: str, data: bytes | None) -> str | None:
        """Put one file back; None when done, else why nothing was changed."""
        path = self.root / relative
        buffer = await self.ctx.files.read(path)
        if data is None:
            try:
                await anyio.to_thread.run_sync(os.unlink, path)
            except FileNotFoundError:
                pass
            except OSError as exc:
                return f"could not be deleted ({exc.strerror or exc})"
            return None
        if buffer is not None:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                return (
                    "open in the editor, and its old content is not UTF-8 text; nothing was changed"
                )
            if buffer == text:  # the editor already shows it: the disk must hold it too
                return await self._write(path, data)
            try:
                await self.ctx.apply_edit(path, buffer, text)
            except (EditRefused, EditNotSaved) as exc:
                return f"the editor did not take the change back: {exc}"
            return None
        return await self._write(path, data)

    async def _write(self, path: Path, data: bytes) -> str | None:
        """Replace the file on disk (temporary file, rename) unless it already holds ``data``."""

        def write() -> None:
            with contextlib.suppress(OSError):
                if path.read_bytes() == data:
                    return
            write_atomic(path, data)

        try:
            await anyio.to_thread.run_sync(write)
        except OSError as exc:
            return f"could not be written ({exc.strerror or exc}); the file is as it was"
        return None
