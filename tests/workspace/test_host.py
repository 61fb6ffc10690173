"""A WorkspaceHost without the LSP layer. The editor is a stand-in that records what
the host sends (the real one is exercised end to end in tests/lsp)."""

from __future__ import annotations

import asyncio
import datetime
from pathlib import Path
from typing import Any

import pytest

from crank.tools import MemoryDocuments
from crank.workspace import Settings, WorkspaceHost
from crank.workspace import host as host_module


class RecordingEditor:
    """Stands in for the editor: keeps events and log lines, allows everything."""

    def __init__(self) -> None:
        self.documents = MemoryDocuments()
        self.events: list[dict[str, Any]] = []
        self.lines: list[str] = []

    def send_event(self, params: dict[str, Any]) -> None:
        self.events.append(params)

    async def apply_edit(self, path: Path, old_text: str, new_text: str) -> None:
        await self.documents.apply_edit(path, old_text, new_text)

    async def ask_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"decision": "allow"}

    def log(self, message: str) -> None:
        self.lines.append(message)


def resolved(path: Path) -> str:
    return str(path.resolve())


async def test_the_prompt_is_rebuilt_when_the_day_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    days = [datetime.date(2026, 11, 29)]
    folder = resolved(tmp_path)
    monkeypatch.setattr(host_module, "seconds_until_tomorrow", lambda: 0.05)
    editor = RecordingEditor()
    host = WorkspaceHost(
        tmp_path.as_uri(),
        tmp_path,
        editor,
        Settings(session_dir=str(tmp_path / "s")),
        env={},
        user_dir=tmp_path / "user",
        resume_last=False,
        today=lambda: days[-1],
    )
    await host.start()
    try:
        assert "Current date: 2026-11-29" in host.system_prompt()["text"]
        await asyncio.sleep(0.2)
        assert not [e for e in editor.events if e["event"]["type"] == "system_prompt_changed"]
        days.append(datetime.date(2026, 11, 30))
        for _ in range(100):
            if any(e["event"]["type"] == "system_prompt_changed" for e in editor.events):
                break
            await asyncio.sleep(0.02)
        assert "Current date: 2026-11-30" in host.system_prompt()["text"]
        assert host.harness.system.endswith(f"Current working directory: {folder}")
        assert "2026-11-30" in host.harness.system
    finally:
        await host.close()
