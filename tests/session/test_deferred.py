"""Messages before the newest compaction are decoded when first asked for, never at
the cost of a check: what a reader gets is what an eager read gives, and a broken line
is still refused by name when the file is opened."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from crank.session import SessionLog, SessionUnreadable, offsets, resume
from crank.session import deferred as deferred_module
from crank.session import tree as tree_module
from crank.session.deferred import is_deferred, message_of, messages_of
from crank.session.entries import (
    ENTRY_FIELDS,
    Shared,
    encode,
    make_header,
    parse_entry,
    split_lines,
)
from crank.session.recall import branch_entries, compacted_entries
from crank.session.tree import SessionTree
from crank.session.usage_totals import UsageTotals
from crank.workspace.sessions import tree_json

from .conftest import ask, call, result, say


async def compacted_session(log: SessionLog) -> list[str]:
    """Eight messages, a compaction keeping the last three, then two more."""
    messages = [
        ask("Make main.py faster."),
        call("read", {"path": "main.py"}, "c1"),
        result("c1", "read", "def slow(n): ... # naïve “loop” \udcff"),
        say("Cache the results."),
        ask("Do it."),
        call("write", {"path": "main.py", "content": "CACHE = {}"}, "c2"),
        result("c2", "write", "ok"),
        say("Done."),
    ]
    ids = [await log.append_message(m) for m in messages]
    await log.append_compaction("They asked for speed.", ids[5], 1234)
    ids.append(await log.append_message(ask("next")))
    ids.append(await log.append_message(say("ok")))
    return ids


def eager(path: Path) -> list[dict[str, Any]]:
    """Every entry of the file as the eager reader parses it, line by line."""
    lines = split_lines(path, path.read_bytes())[1:]
    shared = Shared()
    return [parse_entry(path, n, line, shared) for n, line in enumerate(lines, start=2)]


async def test_messages_before_the_kept_entry_wait_and_read_back_as_an_eager_read(
    log: SessionLog,
) -> None:
    ids = await compacted_session(log)
    tree = SessionTree.read(log.path)
    held = {e["id"]: e["message"] for e in tree.entries if e["type"] == "message"}
    assert [is_deferred(held[i]) for i in ids] == [True] * 5 + [False] * 5
    assert resume(log.path) == log.replay()  # the transcript needs none of them
    assert all(is_deferred(held[i]) for i in ids[:5])
    by_id = {e["id"]: e for e in eager(log.path)}
    for entry in tree.entries:
        if entry["type"] == "message":
            assert message_of(tree.path, entry) == by_id[entry["id"]]["message"]
    assert not any(is_deferred(e.get("message")) for e in tree.entries)  # decoded in place


async def test_a_deferred_message_is_decoded_once_for_every_reader(log: SessionLog) -> None:
    await compacted_session(log)
    tree = SessionTree.read(log.path)
    first = tree.entries[0]
    assert is_deferred(first["message"])
    seen: list[object] = []
    start = threading.Barrier(4)

    def read() -> None:
        start.wait()
        seen.append(message_of(tree.path, first))

    threads = [threading.Thread(target=read) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 4 and all(message is first["message"] for message in seen)


async def test_what_reads_old_messages_decodes_them(log: SessionLog) -> None:
    """Recall searches the compacted messages, the tree view previews every entry and
    the usage totals count every reply: each sees what an eager read would show."""
    await compacted_session(log)
    log.close()
    reopened = SessionLog.open(log.path)
    try:
        eager_entries = eager(log.path)
        eager_messages = [e["message"] for e in eager_entries if e["type"] == "message"]
        old = compacted_entries(reopened)
        assert all(is_deferred(e["message"]) for e in old)  # listed without a decode
        assert messages_of(reopened.path, old) == eager_messages[:5]
        assert messages_of(reopened.path, branch_entries(reopened)) == eager_messages
        totals = UsageTotals.of(reopened.entries())
        assert totals.counts == UsageTotals.of(eager_entries).counts
        previews = [e.get("preview") for e in tree_json(reopened)["entries"]]
        assert previews[0] == "Make main.py faster." and "[read]" in previews
    finally:
        reopened.close()


async def test_usage_is_counted_without_decoding_a_deferred_reply(log: SessionLog) -> None:
    await compacted_session(log)
    tree = SessionTree.read(log.path)
    totals = UsageTotals.of(tree.entries)
    assert totals.counts == UsageTotals.of(eager(log.path)).counts
    assert is_deferred(tree.entries[1]["message"])  # the first reply, still its bytes


def line(entry_id: str, parent: str | None, message: bytes) -> bytes:
    """A message line spelled as our writer spells it, with ``message`` as it is."""
    spelled_parent = b"null" if parent is None else b'"' + parent.encode() + b'"'
    head = b'{"type":"message","id":"' + entry_id.encode() + b'","parentId":' + spelled_parent
    return head + b',"timestamp":1,"message":' + message + b"}"


def spelled(
    path: Path,
    lines: list[bytes],
    *,
    kept_parent: str = "m3",
    compaction: dict[str, Any] | None = None,
    after: tuple[bytes, ...] = (),
) -> Path:
    """A file of a header, ``lines``, then the kept entry (its parent ``kept_parent``),
    a compaction keeping it (with the fields ``compaction`` adds) and ``after``."""
    kept = line("k", kept_parent, encode(ask("kept"))[:-1])
    record = {
        "type": "compaction",
        "id": "c",
        "parentId": "k",
        "timestamp": 1,
        "summary": "s",
        "firstKeptId": "k",
        "tokensBefore": 1,
    }
    header = encode(make_header("s", "/w", "2026-01-01T00:00:00.000Z"))
    end = encode(record | (compaction or {})) + b"".join(more + b"\n" for more in after)
    path.write_bytes(header + b"\n".join(lines) + b"\n" + kept + b"\n" + end)
    return path


ODD_LINES = {
    "a key the reader does not know": b'{"type":"message","id":"m1","parentId":null,'
    b'"timestamp":1,"by":"a newer version","message":{"role":"user","content":"a"}}',
    "a timestamp that is not an integer": b'{"type":"message","id":"m1","parentId":null,'
    b'"timestamp":"1","message":{"role":"user","content":"a"}}',
}

PLAIN_ENOUGH = {
    "another writer's spacing": b'{"type":"message", "id":"m1", "parentId":null, '
    b'"timestamp":1, "message": {"role": "user", "content":"a"}}',
    "the role not first": b'{"type":"message","id":"m1","parentId":null,'
    b'"timestamp":1,"message":{"content":"a","role":"user"}}',
}
"""Spelled otherwise than our writer does, but nothing the strict decode cannot check."""


PLAIN_LINE = line("m1", None, b'{"role":"user","content":"a"}')


def deferred_flags(tree: SessionTree) -> list[bool]:
    """Which of the tree's entries hold a deferred message, in file order."""
    return [is_deferred(e.get("message")) for e in tree.entries]


def three_then_kept(path: Path, first: bytes) -> Path:
    """``first``, a reply with usage and a user message before the kept entry."""
    rest = [
        line("m2", "m1", b'{"role":"assistant","content":[],"usage":{"input":3}}'),
        line("m3", "m2", b'{"role":"user","content":"b"}'),
    ]
    return spelled(path, [first, *rest])


@pytest.mark.parametrize("odd", sorted(ODD_LINES))
def test_a_line_the_reader_cannot_vouch_for_has_every_line_read_at_once(
    tmp_path: Path, odd: str
) -> None:
    path = three_then_kept(tmp_path / "s.jsonl", ODD_LINES[odd])
    tree = SessionTree.read(path)
    assert not any(is_deferred(e.get("message")) for e in tree.entries)
    assert tree.entries[0]["message"]["content"] == "a"
    assert [e["id"] for e in tree.entries] == ["m1", "m2", "m3", "k", "c"]
    assert UsageTotals.of(tree.entries).counts["input"] == 3
    path.write_bytes(path.read_bytes().replace(ODD_LINES[odd], PLAIN_LINE))
    # the same file with that line as our writer spells it
    assert deferred_flags(SessionTree.read(path)) == [True, True, True, False, False]


@pytest.mark.parametrize("odd", sorted(PLAIN_ENOUGH))
def test_spacing_and_key_order_still_defer_and_read_back_as_an_eager_read(
    tmp_path: Path, odd: str
) -> None:
    path = three_then_kept(tmp_path / "s.jsonl", PLAIN_ENOUGH[odd])
    tree = SessionTree.read(path)
    assert deferred_flags(tree) == [True, True, True, False, False]
    assert UsageTotals.of(tree.entries).counts["input"] == 3
    eager = SessionTree.load(path, path.read_bytes().replace(b'"timestamp":1', b'"timestamp":1.0'))
    assert not any(is_deferred(e.get("message")) for e in eager.entries)
    assert message_of(path, tree.entries[0]) == {"role": "user", "content": "a"}
    assert message_of(path, tree.entries[0]) == eager.entries[0]["message"]


def test_a_line_of_only_whitespace_among_them_leaves_each_message_with_its_own_line(
    tmp_path: Path,
) -> None:
    """The one decode steps over a line of nothing but whitespace (another writer's
    blank line); the lines kept for the messages step over it too, so each deferred
    message is still read from its own line."""
    reply = line("m2", "m1", b'{"role":"assistant","content":[],"usage":{"input":3}}')
    user = line("m3", "m2", b'{"role":"user","content":"b"}')
    path = spelled(tmp_path / "s.jsonl", [PLAIN_LINE, b" \t\r", reply, b"", user])
    tree = SessionTree.read(path)
    assert deferred_flags(tree) == [True, True, True, False, False]
    assert UsageTotals.of(tree.entries).counts["input"] == 3
    read = [message_of(path, entry) for entry in tree.entries[:3]]
    assert read == [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": [], "usage": {"input": 3}},
        {"role": "user", "content": "b"},
    ]


def test_a_line_holding_two_entries_is_refused_when_an_old_message_is_read(
    tmp_path: Path,
) -> None:
    """The one decode reads every JSON value of a line, so a line holding two entries
    (which the eager read refuses as not JSON) gives two: the messages can then not be
    told from their places among the lines. That is found when the lines are first
    split, and refused by name then, never a message read from another entry's line."""
    reply = line("m2", "m1", b'{"role":"assistant","content":[],"usage":{"input":3}}')
    user = line("m3", "m2", b'{"role":"user","content":"b"}')
    path = spelled(tmp_path / "s.jsonl", [PLAIN_LINE + reply, user])
    with pytest.raises(SessionUnreadable) as eager_refusal:
        eager(path)
    tree = SessionTree.read(path)
    assert deferred_flags(tree) == [True, True, True, False, False]
    assert resume(path)[-1]["content"] == "kept"  # the transcript needs none of them
    for entry in tree.entries[:3]:
        with pytest.raises(SessionUnreadable) as refused:
            message_of(path, entry)
        assert refused.value.where == "line 2" and "not one JSON value" in refused.value.problem
    assert eager_refusal.value.where == "line 2"


def test_a_deferred_message_with_bytes_that_are_not_utf8_reads_as_an_eager_read(
    tmp_path: Path,
) -> None:
    """The one decode skips a message's text unread, so a line an earlier version wrote
    with bytes that are not UTF-8 is deferred; msgspec then refuses it when the message
    is read, and the standard library reads it as the eager read does (the bytes shown
    escaped)."""
    odd = line("m1", None, b'{"role":"user","content":"caf\xe9 \xff"}')
    path = three_then_kept(tmp_path / "s.jsonl", odd)
    tree = SessionTree.read(path)
    assert deferred_flags(tree) == [True, True, True, False, False]
    by_id = {e["id"]: e for e in eager(path)}
    assert message_of(path, tree.entries[0]) == by_id["m1"]["message"]
    assert "\\xff" in by_id["m1"]["message"]["content"]


def test_nothing_but_blank_lines_before_the_kept_entry_is_refused_by_name(
    tmp_path: Path,
) -> None:
    """The one decode reads no entry from lines of only whitespace: the file goes to the
    eager read, which refuses the first such line by name, never an IndexError."""
    path = spelled(tmp_path / "s.jsonl", [b"  "])
    for read in (SessionTree.read, lambda p: SessionTree.load(p, p.read_bytes())):
        with pytest.raises(SessionUnreadable) as refused:
            read(path)
        assert refused.value.where == "line 2" and "not JSON" in refused.value.problem


async def test_opening_splits_none_of_the_deferred_lines(
    log: SessionLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The open reads each deferred message's role and usage in its one decode: what
    it does next (the transcript, the totals) asks for no deferred line, so the lines
    are split only when a message among them is first read (the tree view's previews,
    recall, a branch to an old entry)."""
    asked: list[int] = []
    original = deferred_module._Lines.line

    def counted(lines: Any, index: int) -> bytes:
        asked.append(index)
        return original(lines, index)

    monkeypatch.setattr(deferred_module._Lines, "line", counted)
    await compacted_session(log)
    log.close()
    reopened = SessionLog.open(log.path)
    try:
        reopened.replay()
        UsageTotals.of(reopened.entries())
        assert asked == []
        old = compacted_entries(reopened)
        assert message_of(reopened.path, old[2])["role"] == "toolResult"
        assert asked == [2]
    finally:
        reopened.close()


BROKEN_LINES = {
    "not JSON": (
        line("m1", None, b'{"role":"user","content":[1,}'),
        "not JSON",
    ),
    "an unknown role": (
        line("m1", None, b'{"role":"robot","content":"a"}'),
        "known role",
    ),
    "no id": (
        line("", None, b'{"role":"user","content":"a"}'),
        "no string 'id'",
    ),
}


@pytest.mark.parametrize("broken", sorted(BROKEN_LINES))
def test_a_broken_line_before_the_kept_entry_is_still_refused_at_open(
    tmp_path: Path, broken: str
) -> None:
    bad, said = BROKEN_LINES[broken]
    rest = [
        line("m2", "m1", b'{"role":"user","content":"b"}'),
        line("m3", "m2", b'{"role":"user","content":"c"}'),
    ]
    path = spelled(tmp_path / "s.jsonl", [bad, *rest])
    with pytest.raises(SessionUnreadable) as refused:
        SessionTree.read(path)
    assert refused.value.where.startswith("line 2") and said in refused.value.problem


async def test_a_compaction_further_back_than_the_search_defers_nothing(
    log: SessionLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    await compacted_session(log)
    offsets.index_path(log.path).unlink()  # else its rows are read: see test_offsets.py
    size = log.path.stat().st_size
    tail = log.path.read_bytes()[-200:]
    assert b'"compaction"' not in tail  # the two messages after it are longer than that
    monkeypatch.setattr(tree_module, "LIVE_SEARCH", 200)
    monkeypatch.setattr(tree_module, "READ_BLOCK", 100)  # the first look, and the blocks
    tree = SessionTree.read(log.path)
    assert size > 200 and not any(is_deferred(e.get("message")) for e in tree.entries)
    assert resume(log.path) == log.replay()
    monkeypatch.setattr(tree_module, "LIVE_SEARCH", size)  # the second, wider look finds it
    deferred = [is_deferred(e.get("message")) for e in SessionTree.read(log.path).entries]
    assert deferred.count(True) == 5 and resume(log.path) == log.replay()


async def test_the_whole_file_in_hand_defers_the_same_messages(log: SessionLog) -> None:
    """``load`` (what repair reads) defers as ``read`` does, and the two agree."""
    await compacted_session(log)
    read = SessionTree.read(log.path)
    loaded = SessionTree.load(log.path, log.path.read_bytes())
    assert [is_deferred(e.get("message")) for e in loaded.entries] == [
        is_deferred(e.get("message")) for e in read.entries
    ]
    assert loaded.entries == read.entries and any(
        is_deferred(e.get("message")) for e in read.entries
    )
    messages = [e for e in loaded.entries if e["type"] == "message"]
    assert messages_of(log.path, messages) == [
        e["message"] for e in eager(log.path) if e["type"] == "message"
    ]


LINK_FAULTS = {
    "an id twice, the second a child of itself": (
        [
            PLAIN_LINE,
            line("m1", "m1", b'{"role":"user","content":"again"}'),
            line("m3", "m1", b'{"role":"user","content":"c"}'),
        ],
        "line 3 (entry m1)",
        "line 2 already",
    ),
    # each line the child of the one before: the read that indexes them at once
    "an id twice in an unbranched part": (
        [
            PLAIN_LINE,
            line("m2", "m1", b'{"role":"user","content":"b"}'),
            line("m1", "m2", b'{"role":"user","content":"again"}'),
            line("m3", "m1", b'{"role":"user","content":"c"}'),
        ],
        "line 4 (entry m1)",
        "line 2 already",
    ),
    "a missing parent": (
        [
            PLAIN_LINE,
            line("m2", "gone", b'{"role":"user","content":"b"}'),
            line("m3", "m2", b'{"role":"user","content":"c"}'),
        ],
        "line 3 (entry m2)",
        "not in the file",
    ),
}


@pytest.mark.parametrize("fault", sorted(LINK_FAULTS))
def test_the_whole_file_checks_still_name_a_line_of_the_deferred_part(
    tmp_path: Path, fault: str
) -> None:
    """Duplicate ids and missing parents are found across the file, deferred part too,
    and named at their own lines."""
    lines, where, said = LINK_FAULTS[fault]
    with pytest.raises(SessionUnreadable) as refused:
        SessionTree.read(spelled(tmp_path / "s.jsonl", lines))
    assert refused.value.where == where and said in refused.value.problem


def test_a_branched_deferred_part_is_indexed_as_an_eager_read_indexes_it(
    tmp_path: Path,
) -> None:
    branched = [
        PLAIN_LINE,
        line("m2", "m1", b'{"role":"user","content":"b"}'),
        line("m3", "m1", b'{"role":"user","content":"c"}'),
    ]
    path = spelled(tmp_path / "branched.jsonl", branched)
    tree = SessionTree.read(path)
    assert deferred_flags(tree) == [True] * 3 + [False] * 2
    assert [e["id"] for e in tree.path_to(tree.tip)] == ["m1", "m3", "k", "c"]
    decoded = [{**e, "message": message_of(path, e)} if "message" in e else e for e in tree.entries]
    assert decoded == eager(path)
    assert tree.count("message") == 4 and tree.count("compaction") == 1
    linear = SessionTree.read(
        spelled(
            tmp_path / "linear.jsonl",
            [PLAIN_LINE, *branched[1:2], line("m3", "m2", b'{"role":"user","content":"c"}')],
        )
    )
    assert [e["id"] for e in linear.path_to(linear.tip)] == ["m1", "m2", "m3", "k", "c"]
    assert linear.count("message") == 4 and linear.count("compaction") == 1
    assert set(linear.by_id) == {"m1", "m2", "m3", "k", "c"}


async def test_every_kind_of_entry_the_log_writes_reads_in_the_one_decode(
    log: SessionLog,
) -> None:
    """The strict read is made from ``ENTRY_FIELDS``: an entry of every kind, written by
    the log, is read there as an eager read gives it. Were a kind (or the envelope) to
    gain a key the strict read does not know, every resume would silently go back to
    reading everything at once: this fails instead."""
    first = await log.append_message(ask("one"))
    fields: dict[str, dict[str, Any]] = {
        "branch": {},
        "compaction": {"summary": "s", "firstKeptId": first, "tokensBefore": 1, "usage": {}},
        "branchSummary": {"summary": "s", "fromId": None, "usage": {"input": 2}},
        "modelChange": {"api": "openai", "modelId": "m"},
        "label": {"targetId": first, "label": "start"},
        "sessionInfo": {"name": "every kind"},
        "fileChanges": {"runId": "r", "toolCallId": None, "files": [{"path": "a"}]},
        "revert": {"runId": "r", "reverts": ["r"], "files": [], "reverted": [], "conflicts": []},
        "keep": {"runId": "r", "paths": ["a"]},
    }
    assert set(fields) | {"message"} == set(ENTRY_FIELDS)
    for kind, values in fields.items():
        log.append_sync(kind, values)  # type: ignore[arg-type]
    await log.append_message(say("two"))
    kept = await log.append_message(ask("three"))
    await log.append_compaction("summary", kept, 5)
    tree = SessionTree.read(log.path)
    assert [is_deferred(e.get("message")) for e in tree.entries[:12]] == [True] + [False] * 9 + [
        True,
        False,
    ]
    for held, expected in zip(tree.entries, eager(log.path), strict=True):
        if held["type"] == "message":
            assert message_of(tree.path, held) == expected["message"]
        else:
            assert held == expected
