"""One table of exit statuses (``crank.cli.exits``), and the README's copy of it."""

from __future__ import annotations

import re
from pathlib import Path

from crank.cli import exits

from .test_run import ROOT, crank

HEADING = "Exit statuses of `crank`"


def readme_table() -> dict[int, str]:
    text = (ROOT / "README.md").read_text("utf-8")
    after = text[text.index(HEADING) :]
    rows = re.findall(r"^\| (\d+) \| (.+) \|$", after.split("\n\n", 2)[1], re.MULTILINE)
    return {int(code): when for code, when in rows}


def test_the_readme_table_is_the_code_table() -> None:
    assert readme_table() == exits.EXIT_CODES


def test_a_bad_command_line_is_the_usage_status(tmp_path: Path) -> None:
    done = crank(tmp_path, "run", "--no-such-option", "hi")
    assert done.returncode == exits.USAGE, done.stderr
