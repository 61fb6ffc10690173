"""The diagnostics note (crank.workspace.diagnostics): bounded, errors and warnings
only, sorted; and the settings refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from crank.workspace.diagnostics import MAX_SHOWN, render
from crank.workspace.errors import CrankError
from crank.workspace.settings import merge_settings


def diagnostic(line: int, severity: int, message: str = "bad") -> dict[str, object]:
    start = {"line": line, "character": 0}
    return {"range": {"start": start, "end": start}, "severity": severity, "message": message}


def test_the_note_is_bounded_and_keeps_only_this_files_errors_and_warnings(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    many = [diagnostic(n, 2) for n in range(30)] + [diagnostic(99, 1, "x" * 1000), diagnostic(0, 3)]
    items = [
        {"uri": path.as_uri(), "diagnostics": many},
        {"uri": (tmp_path / "other.py").as_uri(), "diagnostics": [diagnostic(0, 1, "elsewhere")]},
    ]
    note = render(items, path, "a.py")
    lines = note.splitlines()
    assert lines[0] == "[The editor now reports 1 error(s) and 30 warning(s) in a.py:"
    assert lines[1].startswith("- 100:1 error: xxx") and len(lines[1]) < 330  # errors first
    assert len(lines) == 1 + MAX_SHOWN + 1 and lines[-1] == "- ... and 11 more not shown]"
    assert "elsewhere" not in note
    assert render([], path, "a.py") == "[The editor reports no errors or warnings in a.py.]"


def test_the_settings_are_checked(tmp_path: Path) -> None:
    config = tmp_path / "none.json"
    parsed = merge_settings(
        {"diagnostics": {"enabled": False, "settleMs": 10}}, None, config_file=config
    )
    assert not parsed.diagnostics.enabled and parsed.diagnostics.settle_ms == 10
    assert merge_settings(None, None, config_file=config).diagnostics.enabled
    for bad in ({"settleMs": -1}, {"settleMs": "1"}, {"enabled": 1}, {"wait": 1}):
        with pytest.raises(CrankError):
            merge_settings({"diagnostics": bad}, None, config_file=config)
