"""The README's first command: the demo really fixes the sample project's bug."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .test_run import clean_env


def test_the_demo_fixes_the_bug_and_shows_the_diff(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "crank.cli", "demo"],
        cwd=tmp_path,
        env=clean_env(COLUMNS="120"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "scripted" in out  # it says the model is a stand-in
    assert "FAILED (failures=2)" in out  # the tests really ran and failed first
    assert out.rstrip().count("OK") >= 1  # ... and really passed after the edit
    assert "-    return total / (len(numbers) + 1)" in out
    assert "+    return total / len(numbers)" in out
    assert list(tmp_path.iterdir()) == []  # nothing left in the caller's directory
