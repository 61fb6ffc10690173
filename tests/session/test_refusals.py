"""Every way a session file can be wrong is refused by name, and nothing is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crank.session import (
    SessionBusy,
    SessionLocked,
    SessionLog,
    SessionUnreadable,
    TornSession,
    UnknownEntry,
    read_tree,
)
from crank.session.repair import repair

from .conftest import ask, say

HEADER = {"type": "session", "version": 1, "id": "s1", "cwd": "/p", "created": "2025-01-01"}


def write_session(path: Path, *entries: dict[str, object] | str) -> bytes:
    lines = [json.dumps(HEADER)] + [e if isinstance(e, str) else json.dumps(e) for e in entries]
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(data)
    return data


def entry(entry_id: str, parent: str | None, text: str = "x") -> dict[str, object]:
    message = {"role": "user", "content": text, "timestamp": 1}
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": 1,
        "message": message,
    }


def refused(path: Path, data: bytes) -> SessionUnreadable:
    """Both reading and opening for writing refuse, and the file is left as it was."""
    with pytest.raises(SessionUnreadable) as reading:
        read_tree(path)
    with pytest.raises(SessionUnreadable):
        SessionLog.open(path)
    assert path.read_bytes() == data
    assert str(path) in str(reading.value)
    assert reading.value.kind == "session_unreadable"
    return reading.value


def test_a_line_that_is_not_json(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    data = write_session(path, entry("a", None), "{not json", entry("c", "a"))
    assert refused(path, data).where == "line 3"


def test_an_entry_without_a_parent_id_key(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    orphan = entry("b", None)
    del orphan["parentId"]
    data = write_session(path, entry("a", None), orphan)
    error = refused(path, data)
    assert error.where == "line 3 (entry b)" and "parentId" in error.problem


def test_a_parent_that_is_not_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    data = write_session(path, entry("a", None), entry("b", "a"), entry("c", "zz"))
    error = refused(path, data)
    assert error.where == "line 4 (entry c)" and "zz" in error.problem


def test_a_cycle_is_named_where_it_is_not_where_the_walk_started(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    data = write_session(
        path, entry("a", None), entry("b", "a"), entry("c", "d"), entry("d", "c"), entry("e", "c")
    )
    error = refused(path, data)
    assert error.where == "line 4 (entry c)"
    assert "c -> d -> c" in error.problem


def test_a_duplicate_id_names_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    data = write_session(path, entry("a", None), entry("b", "a"), entry("b", "a"))
    error = refused(path, data)
    assert error.where == "line 4 (entry b)" and "line 3" in error.problem


def test_a_second_root(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    data = write_session(path, entry("a", None), entry("b", None))
    assert refused(path, data).where == "line 3 (entry b)"


def test_an_unknown_type_that_carries_a_message_is_not_skipped(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    odd = entry("b", "a") | {"type": "futureThing"}
    data = write_session(path, entry("a", None), odd)
    assert "futureThing" in refused(path, data).problem


def test_an_unknown_type_without_a_message_is_stepped_over(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    odd = {"type": "futureThing", "id": "b", "parentId": "a", "timestamp": 1}
    write_session(path, entry("a", None, "kept"), odd)
    tree = read_tree(path)
    assert tree.tip == "b" and len(tree) == 2


def test_a_newer_format_version(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(HEADER | {"version": 2}) + "\n")
    assert "version 2" in refused(path, path.read_bytes()).problem


@pytest.mark.parametrize("kept", ["c", "d", "k"])
def test_a_compaction_whose_cut_is_not_before_it_on_its_branch(tmp_path: Path, kept: str) -> None:
    """Off its branch (c), after it (d) or itself (k): refused, naming the compaction."""
    from crank.session import resume

    path = tmp_path / "s.jsonl"
    compaction = {"type": "compaction", "id": "k", "parentId": "b", "timestamp": 1}
    compaction |= {"summary": "s", "firstKeptId": kept, "tokensBefore": 9}
    entries = (entry("a", None), entry("b", "a"), entry("c", "a"), compaction, entry("d", "k"))
    write_session(path, *entries)
    with pytest.raises(SessionUnreadable, match="entry k"):
        resume(path)


async def test_branch_to_an_unknown_id_writes_nothing_and_names_it(log: SessionLog) -> None:
    await log.append_message(ask("a"))
    before = log.path.read_bytes()
    with pytest.raises(UnknownEntry) as error:
        await log.branch_to("deadbeef")
    assert "deadbeef" in str(error.value) and error.value.kind == "invalid_params"
    assert log.path.read_bytes() == before and len(log.tree) == 1


async def test_branch_while_a_run_is_active_writes_nothing(log: SessionLog) -> None:
    first = await log.append_message(ask("a"))
    await log.listener()({"type": "agent_start"})
    before = log.path.read_bytes()
    with pytest.raises(SessionBusy) as error:
        await log.branch_to(first)
    assert error.value.kind == "refused_while_running"
    assert log.path.read_bytes() == before


async def test_a_torn_last_line_is_reported_then_repaired_into_a_sidecar(log: SessionLog) -> None:
    await log.append_message(ask("kept"))
    await log.append_message(say("kept too"))
    path = log.path
    log.close()
    torn = b'{"type":"message","id":"12345678","parentId":"x","mess'
    with path.open("ab") as file:
        file.write(torn)
    with pytest.raises(TornSession) as error:
        SessionLog.open(path)
    assert f"crank sessions repair {path}" in str(error.value)
    assert error.value.where == "line 4" and error.value.kind == "session_unreadable"
    with pytest.raises(TornSession):
        read_tree(path)

    fixed = repair(path)
    assert fixed.sidecar is not None and fixed.sidecar.read_bytes() == torn
    assert fixed.moved_bytes == len(torn) and fixed.entries == 2
    with SessionLog.open(path) as reopened:
        assert [m["content"] for m in reopened.replay() if m["role"] == "user"] == ["kept"]
        await reopened.append_message(ask("writable again"))
    assert repair(path).sidecar is None


def test_repair_refuses_a_session_another_writer_holds(log: SessionLog) -> None:
    with log.path.open("ab") as file:
        file.write(b"{partial")
    before = log.path.read_bytes()
    with pytest.raises(SessionLocked):
        repair(log.path)
    assert log.path.read_bytes() == before
    assert list(log.path.parent.glob("*.torn-*")) == []


def test_repair_refuses_other_damage_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_session(path, entry("a", None), entry("b", "missing"))
    with path.open("ab") as file:
        file.write(b"{torn")
    before = path.read_bytes()
    with pytest.raises(SessionUnreadable, match="entry b"):
        repair(path)
    assert path.read_bytes() == before
    assert list(tmp_path.glob("*.torn-*")) == []


async def test_an_append_under_an_unknown_parent_writes_nothing(log: SessionLog) -> None:
    await log.append_message(ask("a"))
    before = log.path.read_bytes()
    with pytest.raises(UnknownEntry, match="cafebabe"):
        await log.append("label", {"targetId": "x"}, parent="cafebabe")
    assert log.path.read_bytes() == before and len(log.tree) == 1
