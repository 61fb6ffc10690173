"""The offset index (``crank/session/offsets.py``): what an open reads instead of every
line, and every way it can stop describing its file. Real files, real appends; the
reference is always the eager read of the same file with the index taken away."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from crank.agent.lineage import LazyRecord
from crank.agent.messages import assistant_message
from crank.session import SessionLog, read_tree
from crank.session.deferred import Stored, is_deferred, message_of
from crank.session.offsets import index_path
from crank.session.replay import transcript_at_tip

from .conftest import ask, call, result, say

USAGE = {"input": 120, "output": 7, "cacheRead": 3, "cacheWrite": 0, "cost": 0.25}


def reply(text: str) -> Any:
    return assistant_message([{"type": "text", "text": text}], usage=USAGE, timestamp=1)


async def a_session(log: SessionLog, turns: int = 3) -> None:
    """Turns of a prompt, a call, its result and a reply with usage, and entries of
    other kinds between them (as a run writes them)."""
    for turn in range(turns):
        await log.append_message(ask(f"turn {turn}"))
        await log.append_message(call("read", {"path": f"f{turn}.py"}, f"c{turn}"))
        await log.append_message(result(f"c{turn}", "read", f"body {turn} “quoted” \udcff"))
        await log.append_model_change("openai", f"m{turn}")
        await log.append_message(reply(f"done {turn}"))


def eager(path: Path) -> Any:
    """The file read as if it had no index (the index moved away and back)."""
    index = index_path(path)
    hidden = index.with_name(index.name + ".hidden")
    index.rename(hidden)
    try:
        return read_tree(path)
    finally:
        hidden.rename(index)


def messages(tree: Any) -> list[Any]:
    return [message_of(tree.path, e) for e in tree.entries if e["type"] == "message"]


async def test_a_reopened_session_reads_its_entries_from_the_index_and_no_message(
    log: SessionLog,
) -> None:
    await a_session(log)
    log.close()
    assert index_path(log.path).stat().st_mode & 0o777 == 0o600  # as private as the session
    tree = read_tree(log.path)
    held = [e["message"] for e in tree.entries if e["type"] == "message"]
    assert held and all(type(m) is Stored for m in held)  # nothing decoded at the open
    whole = eager(log.path)
    assert [e["id"] for e in tree.entries] == [e["id"] for e in whole.entries]
    assert [e["type"] for e in tree.entries] == [e["type"] for e in whole.entries]
    assert [e for e in tree.entries if e["type"] != "message"] == [
        e for e in whole.entries if e["type"] != "message"
    ]
    assert messages(tree) == messages(whole)
    assert transcript_at_tip(tree) == transcript_at_tip(whole)


async def test_the_writer_reopening_it_hands_out_a_lazy_record_and_sums_usage_from_the_rows(
    log: SessionLog,
) -> None:
    await a_session(log, turns=4)
    expected = log.usage_totals()
    log.close()
    with SessionLog.open(log.path) as opened:
        record = opened.resumed()
        assert isinstance(record, LazyRecord) and record.sent_as_is()
        assert opened.usage_totals().counts == expected.counts
        assert opened.usage_totals().cost == pytest.approx(expected.cost)
        assert record[-1] == reply("done 3") and len(record) == 16
        held = [e["message"] for e in opened.tree.entries if e["type"] == "message"]
        assert sum(is_deferred(m) for m in held) == 15  # the one read, only
        assert record == opened.replay() == record.read_all()
        await opened.append_message(ask("and one more"))  # a row for it, after them
    with SessionLog.open(log.path) as again:
        assert again.tree.covered is not None and again.tree.covered.entries == 21
        assert again.replay()[-1] == ask("and one more")
        more = reply("x")
        assert again.usage_totals().counts["input"] == expected.counts["input"]
        await again.append_message(more)
        assert again.usage_totals().counts["input"] == expected.counts["input"] + 120


async def test_a_dangling_call_is_not_sent_as_is_however_the_record_is_read(
    log: SessionLog,
) -> None:
    await a_session(log, turns=2)
    await log.append_message(call("bash", {"command": "sleep 9"}, "crashed"))
    await log.append_message(ask("where were we?"))  # a crash, then a new prompt
    log.close()
    with SessionLog.open(log.path) as opened:
        record = opened.resumed()
        assert isinstance(record, LazyRecord) and not record.sent_as_is()
        index_path(log.path).unlink()
    with SessionLog.open(log.path) as rebuilt:  # the rows made again from every line
        record = rebuilt.resumed()
        assert isinstance(record, LazyRecord) and not record.sent_as_is()
    with SessionLog.open(log.path) as third:
        record = third.resumed()
        assert isinstance(record, LazyRecord) and not record.sent_as_is()


async def test_a_file_changed_where_the_index_covers_is_read_whole_and_reindexed(
    log: SessionLog,
) -> None:
    await a_session(log)
    log.close()
    data = log.path.read_bytes()
    edited = data.replace(b"body 1", b"BODY 1")  # the same length, a line in the middle
    assert len(edited) == len(data) and edited != data
    log.path.write_bytes(edited)
    tree = read_tree(log.path)
    assert tree.covered is None  # refused: its CRC is not the file's
    assert not any(is_deferred(e.get("message")) for e in tree.entries)
    assert "BODY 1" in str(messages(tree))
    with SessionLog.open(log.path):  # the writer makes it again from the file as it is
        pass
    again = read_tree(log.path)
    assert again.covered is not None and "BODY 1" in str(messages(again))


async def test_a_file_cut_shorter_than_its_index_is_read_whole(log: SessionLog) -> None:
    await a_session(log)
    log.close()
    data = log.path.read_bytes()
    last = data.rstrip(b"\n").rfind(b"\n") + 1
    log.path.write_bytes(data[:last])  # the last entry gone (a repair cut more, say)
    tree = read_tree(log.path)
    assert tree.covered is None and len(tree.entries) == len(eager(log.path).entries)


async def test_lines_past_the_index_are_read_and_a_torn_row_is_cut(log: SessionLog) -> None:
    await a_session(log, turns=2)
    covered = index_path(log.path).read_bytes()
    await log.append_message(ask("not in the index"))
    await log.append_message(say("nor this"))
    log.close()
    index_path(log.path).write_bytes(covered + b'{"type":"message","id":"tor')  # a crash
    tree = read_tree(log.path)
    assert tree.covered is not None and tree.covered.entries == 10
    assert messages(tree)[-2:] == [ask("not in the index"), say("nor this")]
    assert messages(tree) == messages(eager(log.path))
    with SessionLog.open(log.path):  # the torn row cut, the two rows written
        pass
    rows = index_path(log.path).read_bytes()
    assert rows.startswith(covered) and b'"tor' not in rows and rows.endswith(b"\n")
    extended = read_tree(log.path)
    assert extended.covered is not None and extended.covered.entries == 12
    assert messages(extended) == messages(tree)


async def test_a_reader_never_writes_the_index(log: SessionLog) -> None:
    await a_session(log, turns=1)
    log.close()
    index_path(log.path).unlink()
    read_tree(log.path)
    assert not index_path(log.path).exists()


async def test_lines_another_writer_spelled_are_read_from_the_file(log: SessionLog) -> None:
    """A message line with a key our writer never writes, and one whose reply has no
    ``stopReason``: their rows only say where the line is, and the open parses them."""
    await a_session(log, turns=1)
    log.close()
    odd = [
        b'{"type":"message","id":"odd1","parentId":"%s","timestamp":5,"extra":1,'
        b'"message":{"role":"user","content":"hand edit","timestamp":1}}\n',
        b'{"type":"message","id":"odd2","parentId":"odd1","timestamp":6,'
        b'"message":{"role":"assistant","content":[],"timestamp":1}}\n',
    ]
    tip = read_tree(log.path).tip
    assert tip is not None
    odd[0] = odd[0] % tip.encode()
    log.path.write_bytes(log.path.read_bytes() + b"".join(odd))
    with SessionLog.open(log.path) as opened:  # rows for them, that say where they are
        await opened.append_message(ask("after them"))
    tree = read_tree(log.path)
    assert tree.covered is not None and tree.covered.entries == len(tree.entries)
    by_id = {e["id"]: e for e in tree.entries}
    assert by_id["odd1"]["extra"] == 1 and by_id["odd2"]["message"]["content"] == []
    assert messages(tree) == messages(eager(log.path))


async def test_a_branched_session_resumes_its_branch(log: SessionLog) -> None:
    await a_session(log, turns=2)
    fork = [e for e in log.tree.entries if e["type"] == "message"][3]["id"]
    await log.branch_to(fork)
    await log.append_message(ask("a second try"))
    expected = log.replay()
    log.close()
    with SessionLog.open(log.path) as opened:
        record = opened.resumed()
        assert isinstance(record, LazyRecord) and record.sent_as_is()
        assert list(record) == expected


async def test_an_index_that_is_not_one_is_ignored(log: SessionLog) -> None:
    await a_session(log, turns=1)
    log.close()
    for garbage in (b"", b"\n", b"not json\n", b'{"crankOffsets":99,"end":1,"crc":1}\n'):
        index_path(log.path).write_bytes(garbage)
        tree = read_tree(log.path)
        assert tree.covered is None and messages(tree) == messages(eager_without(log.path))


def eager_without(path: Path) -> Any:
    index = index_path(path)
    saved = index.read_bytes()
    index.unlink()
    try:
        return read_tree(path)
    finally:
        index.write_bytes(saved)


async def test_a_message_read_after_the_file_was_cut_names_the_entry(log: SessionLog) -> None:
    await a_session(log, turns=1)
    log.close()
    tree = read_tree(log.path)
    size = log.path.stat().st_size
    os.truncate(log.path, size // 2)
    last = [e for e in tree.entries if e["type"] == "message"][-1]
    with pytest.raises(Exception, match=last["id"]):
        message_of(tree.path, last)


async def test_an_older_writers_compacted_file_keeps_its_one_decode_and_gets_no_index(
    log: SessionLog,
) -> None:
    """A compaction written before ``usageBefore``: the open reads what precedes its
    kept entry in one decode (``deferred.py``), cheaper than making the index."""
    await a_session(log, turns=2)
    kept = [e for e in log.tree.entries if e["type"] == "message"][-2]["id"]
    await log.append_compaction("They read two files.", kept, 99)
    await log.append_message(ask("next"))
    log.close()
    data = log.path.read_bytes()
    start = data.index(b'"type":"compaction"')
    before = data.index(b',"usageBefore"', start)
    after = data.index(b"}", data.index(b'"cost"', before)) + 1
    log.path.write_bytes(data[:before] + data[after:])  # as the writer before it wrote it
    index_path(log.path).unlink()
    with SessionLog.open(log.path) as opened:
        held = [e["message"] for e in opened.tree.entries if e["type"] == "message"]
        assert any(type(m) is not Stored and is_deferred(m) for m in held)  # the one decode
        assert opened.replay()[-1] == ask("next")
    assert not index_path(log.path).exists()
