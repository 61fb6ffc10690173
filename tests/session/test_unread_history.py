"""A compacted session opens without reading the history its newest compaction
summarised: the compaction records what that history used (``usageBefore``), the model
is shown what follows its kept entry, and the history is read, and checked as strictly
as an open checks it, the first time anything asks for the whole tree. What a reader
gets is what a whole read gives, whenever the history is read; a fault in it is refused
by name, and nothing is written past it."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from crank.session import SessionLog, SessionUnreadable, resume
from crank.session import log as log_module
from crank.session.entries import encode, new_entry_id
from crank.session.log import read_tree
from crank.session.recall import Recall
from crank.session.replay import transcript
from crank.session.tree import SessionTree
from crank.session.usage_totals import UsageTotals
from crank.workspace.sessions import tree_json

from .conftest import ask, say
from .test_deferred import compacted_session, eager, line, spelled


def whole(path: Path) -> SessionTree:
    """The tree of every line, as an open that leaves nothing unread builds it."""
    tree = read_tree(path)
    tree.complete()
    return tree


async def test_a_compaction_records_what_every_entry_before_it_used(log: SessionLog) -> None:
    paid = {"input": 120, "output": 30, "cacheRead": 7, "cacheWrite": 2, "cost": 0.25}
    await log.append_message({**say("Reading the code first."), "usage": paid})  # type: ignore[typeddict-item]
    ids = await compacted_session(log)
    entries = eager(log.path)
    at = next(n for n, e in enumerate(entries) if e["type"] == "compaction")
    recorded = UsageTotals.recorded(entries[at]["usageBefore"])
    assert recorded is not None and ids[5] == entries[at]["firstKeptId"]
    summed = UsageTotals.of(entries[:at])
    assert recorded.counts == summed.counts and recorded.cost == summed.cost
    assert summed.counts == {"input": 120, "output": 30, "cacheRead": 7, "cacheWrite": 2}


async def test_the_open_reads_nothing_before_the_kept_entry_and_agrees_with_a_whole_read(
    log: SessionLog,
) -> None:
    ids = await compacted_session(log)
    log.close()
    reopened = SessionLog.open(log.path)
    try:
        tree = reopened.tree
        assert tree.unread and [e["id"] for e in tree.held][:3] == ids[5:8]
        replayed = reopened.replay()
        totals = reopened.usage_totals()
        assert tree.unread  # neither read the history
        full = whole(log.path)
        assert replayed == transcript(full.path, full.path_to(full.tip))
        assert replayed == resume(log.path)
        summed = UsageTotals.of(eager(log.path))
        assert totals.counts == summed.counts and totals.cost == summed.cost
        assert Recall(reopened).available() and tree.unread  # recall is offered unread
        assert [e["id"] for e in tree.entries] == [e["id"] for e in eager(log.path)]
        assert not tree.unread and tree.count("compaction") == 1
    finally:
        reopened.close()


async def test_what_was_read_at_the_open_stays_the_same_objects(log: SessionLog) -> None:
    await compacted_session(log)
    log.close()
    with SessionLog.open(log.path) as reopened:
        held = list(reopened.tree.held)
        reopened.tree.complete()
        assert all(a is b for a, b in zip(held, reopened.tree.entries[-len(held) :], strict=True))
        assert reopened.tree.by_id[held[0]["id"]] is held[0]


async def test_the_first_append_reads_the_history_and_mints_no_id_it_holds(
    log: SessionLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = await compacted_session(log)
    log.close()
    with SessionLog.open(log.path) as reopened:
        assert reopened.tree.unread
        # every new id is first offered one the unread history holds: refused there
        offered = iter([ids[0], ids[1], "0000beef"])
        monkeypatch.setattr(
            log_module, "new_entry_id", lambda taken: new_entry_id(taken, lambda _n: next(offered))
        )
        new = await reopened.append_message(ask("and the tests?"))
    assert new == "0000beef" and not reopened.tree.unread
    reread = eager(log.path)
    assert len({e["id"] for e in reread}) == len(reread)
    assert [e["id"] for e in reread][: len(ids) - 2] == [e["id"] for e in eager(log.path)][:8]
    assert resume(log.path)[-1]["content"] == "and the tests?"


def history_with(path: Path, first: bytes, *, kept_parent: str = "m2") -> Path:
    """A header, ``first``, a reply, then the kept entry, a compaction that records the
    usage before it (as the log writes one) and a message after it."""
    return spelled(
        path,
        [first, line("m2", "m1", b'{"role":"assistant","content":[],"usage":{"input":3}}')],
        kept_parent=kept_parent,
        compaction={"usageBefore": UsageTotals().as_usage() | {"input": 3}},
        after=(line("n", "c", encode(say("after"))[:-1]),),
    )


BROKEN = {
    "not JSON": (line("m1", None, b'{"role":"user","content":[1,}'), "line 2", "not JSON"),
    "an unknown role": (line("m1", None, b'{"role":"robot"}'), "line 2", "known role"),
    "an id the entries read use": (line("n", None, b'{"role":"user"}'), "line", "duplicate id"),
}


@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_a_fault_in_the_unread_history_is_refused_by_name_when_it_is_read(
    tmp_path: Path, broken: str
) -> None:
    bad, where, said = BROKEN[broken]
    path = history_with(tmp_path / "s.jsonl", bad)
    with SessionLog.open(path) as opened:
        assert opened.tree.unread
        assert opened.replay()[-1] == say("after")
        before = path.read_bytes()
        for _ in range(2):  # the tree stays as it was: refused again, not half-read
            with pytest.raises(SessionUnreadable) as refused:
                opened.tree.entries  # noqa: B018
            assert refused.value.where.startswith(where) and said in refused.value.problem
            assert opened.tree.unread
        with pytest.raises(SessionUnreadable):
            opened.append_message_sync(ask("more"))
        assert path.read_bytes() == before  # nothing written past a history refused


def test_a_fault_after_the_history_names_its_own_line(tmp_path: Path) -> None:
    """The lines read at the open are numbered from their true place in the file."""
    path = history_with(tmp_path / "s.jsonl", line("m1", None, b'{"role":"user"}'))
    path.write_bytes(path.read_bytes() + line("x", "n", b'{"role":"user","content":[1,}') + b"\n")
    with pytest.raises(SessionUnreadable) as refused:
        SessionLog.open(path)
    assert refused.value.where.startswith("line 7")


def test_a_kept_entry_whose_parent_is_not_in_the_history_is_refused_when_it_is_read(
    tmp_path: Path,
) -> None:
    path = history_with(
        tmp_path / "s.jsonl", line("m1", None, b'{"role":"user"}'), kept_parent="zz"
    )
    tree = read_tree(path)
    with pytest.raises(SessionUnreadable) as refused:
        tree.complete()
    assert "parent zz is not in the file" in refused.value.problem
    assert refused.value.where.startswith("line 4")


@pytest.mark.parametrize(
    "recorded",
    [
        None,
        {"input": "3"},
        {"input": 1, "output": 0, "cacheRead": 0, "cacheWrite": 0, "cost": -1},
        {"input": 1, "output": 0, "cacheRead": 0, "cacheWrite": 0, "cost": 10**400},
    ],
)
def test_a_record_that_is_not_one_has_the_history_read_and_summed(
    tmp_path: Path, recorded: dict[str, Any] | None
) -> None:
    path = history_with(tmp_path / "s.jsonl", line("m1", None, b'{"role":"user"}'))
    spelled = b'"usageBefore":' + encode(UsageTotals().as_usage() | {"input": 3})[:-1]
    replaced = b"" if recorded is None else b'"usageBefore":' + encode(recorded)[:-1]
    data = path.read_bytes()
    assert spelled in data
    data = data.replace(b"," + spelled, b"" if recorded is None else b"," + replaced)
    path.write_bytes(data)
    with SessionLog.open(path) as opened:
        assert opened.usage_totals().counts["input"] == 3  # m2's reply, summed
        assert not opened.tree.unread


async def test_a_tip_back_before_the_kept_entry_reads_the_history(log: SessionLog) -> None:
    """After going back to an entry the compaction summarised, the path to the tip runs
    through the history: the open reads it, and the transcript is the whole read's."""
    ids = await compacted_session(log)
    await log.branch_to(ids[1])
    await log.append_message(ask("another way"))
    log.close()
    with SessionLog.open(log.path) as reopened:
        replayed = reopened.replay()
        assert not reopened.tree.unread
    assert replayed[-1]["content"] == "another way" and replayed == resume(log.path)
    full = whole(log.path)
    assert replayed == transcript(full.path, full.path_to(full.tip))


async def test_readers_on_two_threads_read_the_history_once(log: SessionLog) -> None:
    await compacted_session(log)
    log.close()
    tree = read_tree(log.path)
    assert tree.unread
    seen: list[list[str]] = []
    ready = threading.Barrier(2)

    def read() -> None:
        ready.wait()
        seen.append([e["id"] for e in tree.entries])

    threads = [threading.Thread(target=read) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    expected = [e["id"] for e in eager(log.path)]
    assert seen == [expected, expected] and len(tree.by_id) == len(expected)


async def test_the_tree_view_reads_the_history(log: SessionLog) -> None:
    ids = await compacted_session(log)
    log.close()
    with SessionLog.open(log.path) as reopened:
        shown = tree_json(reopened)
    assert [e["id"] for e in shown["entries"] if e["type"] == "message"][:3] == ids[:3]


async def test_the_path_to_the_tip_steps_over_a_branch_in_the_unread_history(
    log: SessionLog,
) -> None:
    """The entries read at the open are one line of descent; the history before them is
    not: the path is walked through it, not taken as the whole file."""
    first = await log.append_message(ask("one"))
    await log.append_message(say("a first try"))
    await log.branch_to(first)
    kept = [await log.append_message(m) for m in (say("a second try"), ask("two"), say("ok"))]
    await log.append_compaction("They tried twice.", kept[1], 10)
    await log.append_message(ask("three"))
    log.close()
    tree = read_tree(log.path)
    assert tree.unread
    assert [e["id"] for e in tree.path_to(tree.tip)] == [
        e["id"] for e in whole(log.path).path_to(tree.tip)
    ]
    assert len(tree.path_to(tree.tip)) == len(tree.entries) - 1  # the first try is not on it


async def test_whether_the_unread_history_forked_is_what_its_compaction_recorded(
    log: SessionLog,
) -> None:
    """``forked`` (crank/state's ``branched``) of a history left unread: the newest
    compaction recorded it (``forkedBefore``), and it is what a whole read says."""
    first = await log.append_message(ask("Try it one way."))
    await log.append_message(say("Tried."))
    await log.branch_to(first)  # went back before the compaction: the fork is in the history
    await compacted_session(log)
    log.close()
    with SessionLog.open(log.path) as reopened:
        assert reopened.tree.unread
        assert reopened.tree.forked() is True and reopened.tree.unread
    assert whole(log.path).forked() is True


async def test_an_unforked_history_is_known_unforked_and_an_older_record_is_not_known(
    log: SessionLog,
) -> None:
    await compacted_session(log)
    log.close()
    # As a writer before ``forkedBefore`` wrote it: only a read of the history would tell.
    data = log.path.read_bytes()
    assert data.count(b',"forkedBefore":false') == 1
    log.path.write_bytes(data.replace(b',"forkedBefore":false', b""))
    with SessionLog.open(log.path) as older:
        assert older.tree.unread and older.tree.forked() is None
        older.tree.complete()
        assert older.tree.forked() is False
    log.path.write_bytes(data)
    with SessionLog.open(log.path) as reopened:
        assert reopened.tree.forked() is False and reopened.tree.unread
        tip = reopened.tree.held[-3]["id"]
        await reopened.branch_to(tip)  # a fork made now, after the open: held, so known
        assert reopened.tree.forked() is True
    assert whole(log.path).forked() is True


async def test_the_change_entries_of_an_unread_history_are_found_without_reading_it(
    log: SessionLog,
) -> None:
    """``entries_of`` (what ``crank/changes`` reads): the history's lines of those kinds
    are found by their first bytes and parsed alone, and equal what a whole read gives;
    a message that spells such a line in its text is not one."""
    kinds: tuple[Any, ...] = ("fileChanges", "revert", "keep")
    changed = {"path": "a.py", "status": "added", "before": None, "after": {"saved": False}}
    await log.append_message(ask('spell one: \n{"type":"keep","id":"x","parentId":null}'))
    await log.append_file_changes({"runId": "r1", "toolCallId": "c0", "files": [changed]})
    await log.append_keep({"runId": "r1", "paths": ["a.py"]})
    await compacted_session(log)
    await log.append_revert(
        {"runId": "revert-1", "reverts": ["r1"], "files": [], "reverted": [], "conflicts": []}
    )
    log.close()
    every = [e for e in eager(log.path) if e["type"] in kinds]
    assert [e["type"] for e in every] == ["fileChanges", "keep", "revert"]
    with SessionLog.open(log.path) as reopened:
        assert reopened.tree.unread
        assert reopened.entries_of(kinds) == every
        assert reopened.entries_of(kinds) == every and reopened.tree.unread  # found once
        reopened.tree.complete()
        assert reopened.entries_of(kinds) == every
    # A fault in one of those lines is refused by name, with its true line (the fourth).
    lines = log.path.read_bytes().split(b"\n")
    assert lines[3].startswith(b'{"type":"keep",')
    lines[3] = lines[3].replace(b'"parentId":', b'"parent":', 1)
    log.path.write_bytes(b"\n".join(lines))
    with SessionLog.open(log.path) as broken:
        assert broken.tree.unread
        with pytest.raises(SessionUnreadable, match=r"line 4 .*no 'parentId' key"):
            broken.entries_of(kinds)
