"""Replay: the path to the tip, branches kept readable, compaction and summaries applied."""

from __future__ import annotations

from crank.session import BRANCH_SUMMARY_PREFIX, COMPACTION_PREFIX, SessionLog, resume

from .conftest import ask, call, result, say


async def build_first_attempt(log: SessionLog) -> list[str]:
    messages = [
        ask("Make main.py faster."),
        call("read", {"path": "main.py"}, "c1"),
        result("c1", "read", "def slow(n): ..."),
        say("Cache the results in a global dict."),
        ask("Do it, then."),
        call("write", {"path": "main.py", "content": "CACHE = {}"}, "c2"),
        result("c2", "write", "ok"),
        say("Done."),
    ]
    return [await log.append_message(m) for m in messages]


async def test_going_back_is_one_new_line_and_the_old_attempt_stays_readable(
    log: SessionLog,
) -> None:
    ids = await build_first_attempt(log)
    old = log.replay()
    before = log.path.read_bytes()
    branch = await log.branch_to(ids[3])
    after = log.path.read_bytes()
    assert after.startswith(before) and after[len(before) :].count(b"\n") == 1
    assert log.tip == branch and log.tree.by_id[branch]["parentId"] == ids[3]
    assert log.tree.by_id[branch]["type"] == "branch"
    assert log.replay() == old[:4]

    await log.append_message(ask("No global, please."))
    roles = [m["role"] for m in log.replay()]
    assert roles == ["user", "assistant", "toolResult", "assistant", "user"]
    assert log.replay(ids[-1]) == old
    assert resume(log.path) == log.replay()


async def test_going_back_twice_to_the_same_entry_keeps_three_attempts(log: SessionLog) -> None:
    ids = await build_first_attempt(log)
    await log.branch_to(ids[3])
    second_tip = await log.append_message(ask("second"))
    await log.branch_to(ids[3])
    await log.append_message(ask("third"))
    assert log.replay()[-1]["content"] == "third"
    assert log.replay(second_tip)[-1]["content"] == "second"
    assert "second" not in str(log.replay())


async def test_a_fresh_process_resumes_at_the_branch_even_before_anything_is_typed(
    log: SessionLog,
) -> None:
    ids = await build_first_attempt(log)
    await log.branch_to(ids[0])
    path = log.path
    log.close()
    with SessionLog.open(path) as again:
        assert [m["content"] for m in again.replay()] == ["Make main.py faster."]
        new = await again.append_message(ask("retry"))
        assert again.tree.by_id[new]["parentId"] == again.tree.entries[-2]["id"]


async def test_compaction_reads_the_rows_before_the_cut_as_one_summary(log: SessionLog) -> None:
    ids = await build_first_attempt(log)
    await log.append_compaction("They asked for speed; main.py has a CACHE.", ids[4], 1234)
    await log.append_message(ask("next"))
    messages = log.replay()
    assert messages[0]["role"] == "user"
    assert isinstance(messages[0]["content"], str)
    assert messages[0]["content"].startswith(COMPACTION_PREFIX)
    assert "main.py has a CACHE" in messages[0]["content"]
    assert [m.get("content") for m in messages[1:2]] == ["Do it, then."]
    assert messages[-1]["content"] == "next"
    assert len(messages) == 1 + 4 + 1
    assert resume(log.path) == messages
    compaction = log.tree.entries[-2]
    assert (compaction["firstKeptId"], compaction["tokensBefore"]) == (ids[4], 1234)


async def test_branching_to_before_a_compaction_leaves_it_off_the_path(log: SessionLog) -> None:
    ids = await build_first_attempt(log)
    await log.append_compaction("summary", ids[4], 10)
    await log.branch_to(ids[-1])
    assert not str(log.replay()).count(COMPACTION_PREFIX)
    assert len(log.replay()) == 8


async def test_labels_names_and_model_changes_carry_no_message(log: SessionLog) -> None:
    ids = await build_first_attempt(log)
    before = log.replay()
    await log.set_label(ids[0], "start")
    await log.set_name("speed work")
    await log.append_model_change("anthropic", "claude-x")
    assert log.replay() == before
    kinds = [e["type"] for e in log.tree.entries[-3:]]
    assert kinds == ["label", "sessionInfo", "modelChange"]
    assert log.tree.entries[-3]["targetId"] == ids[0]


async def test_a_branch_summary_reads_as_a_user_message_on_the_new_branch(log: SessionLog) -> None:
    ids = await build_first_attempt(log)
    await log.append("branch", {}, parent=ids[3])
    await log.append("branchSummary", {"summary": "wrote main.py", "fromId": ids[-1]})
    last = log.replay()[-1]
    assert last["role"] == "user" and isinstance(last["content"], str)
    assert last["content"].startswith(BRANCH_SUMMARY_PREFIX)
    assert last["content"].endswith("wrote main.py")


def test_a_file_whose_parents_come_after_their_children_still_replays(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Opening takes a shortcut when every parent precedes its child (every file Crank
    writes): the links and cycles need no second look. A file in another order (written
    by hand, or by another tool) is still read, through the full checks."""
    from crank.session.entries import encode, make_header

    def entry(entry_id: str, parent: str | None, message: object) -> bytes:
        return encode(
            {"type": "message", "id": entry_id, "parentId": parent, "timestamp": 1}
            | {"message": message}
        )

    lines = [
        encode(make_header("s", "/w", "2026-01-01T00:00:00.000Z")),
        entry("a", None, ask("one")),
        entry("c", "b", ask("three")),
        entry("b", "a", say("two")),
    ]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(lines))
    assert [m["role"] for m in resume(path)] == ["user", "assistant"]  # the tip is b


def test_a_linear_session_branched_later_replays_the_branch(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A session read back with every entry after its parent has its tip's path taken
    whole; once it branches, the path is walked again."""
    with SessionLog.create(tmp_path, "/w") as log:
        first = log.append_message_sync(ask("one"))
        log.append_message_sync(say("two"))
        path = log.path
    with SessionLog.open(path) as log:
        assert [m["role"] for m in log.replay()] == ["user", "assistant"]
        log.append_sync("branch", {}, parent=first)
        log.append_message_sync(ask("again"))
        assert [m["content"] for m in log.replay()] == ["one", "again"]


async def test_a_branch_of_messages_only_replays_as_the_rows_do(log: SessionLog) -> None:
    """A session never branched, compacted or labelled is replayed without the id rows
    (the resume shortcut): the same messages, the very objects the entries hold, in a
    list of its own (the harness's record must not be the tree's list)."""
    from crank.session.replay import replay_rows, transcript

    await build_first_attempt(log)
    branch = log.tree.path_to(log.tip)
    rows, summary = replay_rows(log.path, branch)
    messages = transcript(log.path, branch)
    assert summary is None and len(messages) == len(rows) == 8
    assert all(m is row[1] for m, row in zip(messages, rows, strict=True))
    messages.append(ask("only in this list"))
    assert len(transcript(log.path, log.tree.path_to(log.tip))) == 8
    await log.set_name("named")  # an entry with no message: the rows again
    assert [m["content"] for m in log.replay()][:1] == ["Make main.py faster."]
    assert len(log.replay()) == 8


async def test_the_tree_counts_each_kind_of_entry_as_it_reads_and_appends(
    log: SessionLog,
) -> None:
    """Resume asks the tree whether anything but messages is in the file (the transcript
    is then the messages as they are) and whether anything was compacted (``recall``),
    instead of a pass over every entry: the counts must follow the file."""
    from crank.session import read_tree
    from crank.session.entries import ENTRY_TYPES
    from crank.session.recall import compacted_entries

    def counted(tree: object) -> dict[str, int]:
        return {kind: tree.count(kind) for kind in ENTRY_TYPES}  # type: ignore[attr-defined]

    def looked(tree: list[dict[str, object]]) -> dict[str, int]:
        return {kind: sum(entry["type"] == kind for entry in tree) for kind in ENTRY_TYPES}

    ids = await build_first_attempt(log)
    assert counted(log.tree) == looked(log.entries()) and log.tree.count("message") == 8
    assert compacted_entries(log) == []
    await log.set_label(ids[1], "read it")
    await log.append_compaction("they asked for speed", ids[4], 1000)
    await log.append_message(ask("more"))
    assert counted(log.tree) == looked(log.entries())
    assert log.tree.count("compaction") == 1 and log.tree.count("label") == 1
    assert [entry["id"] for entry in compacted_entries(log)] == ids[:4]
    assert log.replay()[0]["content"].startswith(COMPACTION_PREFIX)  # type: ignore[union-attr]
    fresh = read_tree(log.path)
    assert counted(fresh) == counted(log.tree)
    assert [m["content"] for m in resume(log.path)] == [m["content"] for m in log.replay()]


def test_a_read_entry_shares_its_parent_id_with_the_entry_before(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Every entry of a resumed session names its parent: in a file never branched that
    is the id just before, kept as one string rather than two equal ones."""
    from crank.session import read_tree

    with SessionLog.create(tmp_path, "/w") as log:
        for text in ("one", "two", "three"):
            log.append_message_sync(ask(text))
        path = log.path
    first, second, third = read_tree(path).entries
    assert second["parentId"] is first["id"] and third["parentId"] is second["id"]
    assert first["parentId"] is None


async def test_an_entrys_line_is_its_line_in_the_file_live_and_read_back(
    log: SessionLog,
) -> None:
    """Lines name faults; they are worked out from the entries' order, not stored, so
    they must be the file's own, for appended entries as for read ones."""
    import json

    from crank.session import read_tree

    ids = await build_first_attempt(log)
    await log.branch_to(ids[2])
    await log.append_message(ask("again"))
    written = log.path.read_text().splitlines()
    on_disk = {json.loads(text)["id"]: number for number, text in enumerate(written, 1)}
    del on_disk[json.loads(written[0])["id"]]  # the header is no entry
    assert log.tree.line_of == on_disk == read_tree(log.path).line_of
    assert log.tree.where(ids[3]) == f"line 5 (entry {ids[3]})"
