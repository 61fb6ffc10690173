"""DocumentSync on its own: dirty state from the notifications, the agent's own edit
told apart from the user's, and waiting on the client without polling."""

from __future__ import annotations

import asyncio
from pathlib import Path

from crank.lsp.sync import DocumentSync


def tracker(tmp_path: Path) -> tuple[DocumentSync, str]:
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    return DocumentSync(lambda uri: Path(uri.removeprefix("file://"))), path.as_uri()


async def settle(sync: DocumentSync, uri: str) -> None:
    """Wait for the disk comparisons started by ``opened`` (its worker tasks)."""
    await sync._tasks.wait()


async def test_open_is_saved_when_the_text_is_the_disks(tmp_path: Path) -> None:
    sync, uri = tracker(tmp_path)
    sync.opened(uri, "x = 1\r\n")  # line endings are not a change
    await settle(sync, uri)
    assert not sync.unsaved(uri)
    other = (tmp_path / "b.py").as_uri()
    (tmp_path / "b.py").write_text("old\n")
    sync.opened(other, "restored unsaved work\n")
    await settle(sync, other)
    assert sync.unsaved(other)


async def test_the_agents_edit_is_not_the_users_but_typing_is(tmp_path: Path) -> None:
    sync, uri = tracker(tmp_path)
    sync.opened(uri, "x = 1\n")
    await settle(sync, uri)
    sync.expect(uri, "x = 2\n")
    sync.changed(uri, "x = 2\n")
    assert not sync.unsaved(uri)
    sync.changed(uri, "x = 2  # typed\n")
    assert sync.unsaved(uri)
    sync.saved(uri, "x = 2  # typed\n")
    assert not sync.unsaved(uri) and sync.saves(uri) == 1


async def test_a_change_right_behind_the_open_wins_over_the_disk_comparison(
    tmp_path: Path,
) -> None:
    sync, uri = tracker(tmp_path)
    sync.opened(uri, "x = 1\n")
    sync.changed(uri, "x = 1  # typed at once\n")
    await settle(sync, uri)
    assert sync.unsaved(uri)


async def test_until_wakes_on_a_notification_and_gives_up_at_its_bound(tmp_path: Path) -> None:
    sync, uri = tracker(tmp_path)
    sync.opened(uri, "x = 1\n")
    await settle(sync, uri)
    waiting = asyncio.ensure_future(sync.until(uri, lambda: sync.saves(uri) > 0, 30))
    await asyncio.sleep(0)
    assert not waiting.done()
    sync.saved(uri, "x = 1\n")
    assert await waiting is True
    assert await sync.until(uri, lambda: False, 0.05) is False
