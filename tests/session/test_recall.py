"""``Recall`` reads what compaction took out of the active branch, word for word, from
the log: by text, by regular expression, by entry id; never an abandoned branch's."""

from __future__ import annotations

from pathlib import Path

from crank.agent.messages import assistant_message, tool_result, user_message
from crank.session import SessionLog
from crank.session.recall import Recall, compacted_entries


async def test_search_fetch_and_only_the_active_branch(tmp_path: Path) -> None:
    with SessionLog.create(tmp_path, str(tmp_path)) as log:
        log.append_message_sync(user_message("run the tests"))
        call = {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "pytest"}}
        log.append_message_sync(assistant_message([call], stop_reason="toolUse"))
        result = log.append_message_sync(
            tool_result(
                "c1", "bash", "line one\nFAILED test_io.py::test_write - OSError: [Errno 28]\nlast"
            )
        )
        fork = log.append_message_sync(assistant_message([{"type": "text", "text": "It failed."}]))
        abandoned = log.append_message_sync(user_message("secret of the abandoned branch"))
        await log.branch_to(fork)
        kept = log.append_message_sync(user_message("now fix it"))
        recall = Recall(log)
        assert not recall.available(), "nothing compacted yet"
        await log.append_compaction("Goal: fix the IO test.", kept, 1000)
        assert recall.available()
        assert [entry["id"] for entry in compacted_entries(log)][-1] == fork
        hits = recall.search("errno 28", regex=False)
        assert [(h.entry_id, h.role) for h in hits] == [(result, "toolResult")]
        assert "FAILED test_io.py::test_write - OSError: [Errno 28]" in hits[0].text
        assert recall.search(r"Errno \d+", regex=True)[0].entry_id == result
        assert recall.search("abandoned", regex=False) == []
        assert recall.entry(abandoned) is None, "an abandoned branch is out of reach"
        assert recall.entry(kept) is None, "a kept entry is not compacted"
        whole = recall.entry(result)
        assert whole is not None and whole.startswith("[bash result]\nline one")
        assert (
            recall.entry(result, offset=3)
            == "FAILED test_io.py::test_write - OSError: [Errno 28]\nlast"
        )
        path = log.path
    reopened = SessionLog.open(path)
    try:
        assert Recall(reopened).search("Errno 28", regex=False), "works after a restart"
    finally:
        reopened.close()


def test_while_turns_are_trimmed_the_whole_active_branch_is_searched(tmp_path: Path) -> None:
    """Under ``trim`` nothing is summarised: the dropped turns are plain entries of the
    branch, so recall searches all of it while the policy leaves turns out, and goes
    back to the compacted region (here: none) when it no longer does."""
    trimmed = [True]
    with SessionLog.create(tmp_path, str(tmp_path)) as log:
        log.append_message_sync(user_message("the task"))
        said = log.append_message_sync(assistant_message([{"type": "text", "text": "code 7919"}]))
        fork = log.append_message_sync(user_message("next"))
        recall = Recall(log, lambda: trimmed[0])
        assert recall.available()
        assert [h.entry_id for h in recall.search("7919", regex=False)] == [said]
        assert recall.entry(fork) == "next"
        trimmed[0] = False
        assert not recall.available() and recall.search("7919", regex=False) == []
