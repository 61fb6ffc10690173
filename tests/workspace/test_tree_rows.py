"""``crank/tree`` rows kept between calls (``TreeRows``): what a call answers is what
making every row afresh answers, after messages, labels (set, changed, cleared) and a
branch; and a call makes previews only for the entries appended since the last."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from crank.session import SessionLog
from crank.workspace import sessions
from crank.workspace.sessions import TreeRows, tree_json
from tests.session.conftest import ask, say


async def test_rows_kept_between_calls_read_as_rows_made_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = 0
    preview = sessions.preview_of

    def counted(message: Any) -> str:
        nonlocal made
        made += 1
        return preview(message)

    monkeypatch.setattr(sessions, "preview_of", counted)
    log = SessionLog.create(tmp_path / "sessions", cwd=str(tmp_path))
    try:
        rows = TreeRows()
        first = await log.append_message(ask("first question"))
        await log.append_message(say("first answer"))
        made = 0
        assert rows.json(log) == tree_json(log)
        made = 0
        again = rows.json(log)
        assert made == 0, "nothing appended: nothing made"
        assert again == tree_json(log)

        await log.set_label(first, "start")
        assert rows.json(log) == tree_json(log)
        assert rows.json(log)["entries"][0]["label"] == "start"
        await log.set_label(first, "renamed")
        await log.set_label(first, None)
        shown = rows.json(log)
        assert shown == tree_json(log) and "label" not in shown["entries"][0]

        await log.branch_to(first)
        await log.append_message(ask("second try"))
        made = 0
        shown = rows.json(log)
        assert made == 1, "a preview for the new message only"
        assert shown == tree_json(log)
        assert shown["tip"] == shown["entries"][-1]["id"]

        other = SessionLog.create(tmp_path / "sessions", cwd=str(tmp_path))
        try:
            await other.append_message(ask("another session"))
            assert rows.json(other) == tree_json(other), "another log starts over"
        finally:
            other.close()
    finally:
        log.close()
