"""The +/- line counts of a changed file (``crank/changes``'s ``linesAdded`` and
``linesRemoved``): a line diff's numbers, and above ``DIFF_LINES`` the linear count,
which agrees with the diff wherever no line moved."""

from __future__ import annotations

import pytest

from crank.workspace import changes
from crank.workspace.changes import line_counts


def text(lines: list[str]) -> bytes:
    return "".join(f"{line}\n" for line in lines).encode()


def test_a_diff_counts_what_changed() -> None:
    old = [f"line {n}" for n in range(10)]
    new = [*old[:3], "new", *old[5:]]
    assert line_counts(text(old), text(new)) == (1, 2)
    assert line_counts(b"", text(old)) == (10, 0)
    assert line_counts(text(old), b"") == (0, 10)
    assert line_counts(b"x", b"x\n") == (1, 1)  # the last line's newline is a change


def test_a_large_file_is_counted_linearly_with_the_same_figures(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    old = [f"line {n}" for n in range(1000)]
    new = [*old[:100], "a", "b", *old[103:200], *old[201:]]  # a middle of 200 lines: a diff
    small = line_counts(text(old), text(new))
    monkeypatch.setattr(changes, "DIFF_LINES", 10)  # the bound is read at each call
    assert line_counts(text(old), text(new)) == small == (2, 4)
