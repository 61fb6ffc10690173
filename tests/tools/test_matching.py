from __future__ import annotations

import pytest

from crank.tools.globs import matches_path
from crank.tools.matching import MatchError, find_once
from crank.tools.walk import ignored, parse_gitignore


def test_exact_match_is_preferred() -> None:
    span = find_once("a  \nb\n", "a  \nb")
    assert (span.start, span.end, span.tolerant) == (0, 5, False)


def test_tolerant_match_covers_trailing_whitespace_of_last_line() -> None:
    content = "x = ‘q’   \ny\n"
    span = find_once(content, "x = 'q'")
    assert span.tolerant
    assert content[span.start : span.end] == "x = ‘q’   "


def test_tolerant_match_must_still_be_unique() -> None:
    with pytest.raises(MatchError, match="occurs 2 times"):
        find_once("a \na\t\n", "a  ")


def test_whitespace_only_old_text_is_refused() -> None:
    with pytest.raises(MatchError):
        find_once("a\n", "   ")


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "src/a.py", True),
        ("*.py", "src/a.pyc", False),
        ("src/*.py", "src/sub/a.py", False),
        ("src/**/*.py", "src/sub/a.py", True),
        ("src/**/*.py", "src/a.py", True),
        ("*.{js,ts}", "x/y.ts", True),
        ("[!a]*.md", "b.md", True),
        ("[!a]*.md", "a.md", False),
        ("?.txt", "ab.txt", False),
    ],
)
def test_globs(pattern: str, path: str, expected: bool) -> None:
    assert matches_path(pattern, path) is expected


def test_gitignore_rules() -> None:
    rules = parse_gitignore("# c\n*.log\n!keep.log\n/top.txt\nbuild/\n")
    layers = [("", 0, rules)]
    assert ignored("a/x.log", False, layers)
    assert not ignored("keep.log", False, layers)
    assert ignored("top.txt", False, layers)
    assert not ignored("a/top.txt", False, layers)
    assert ignored("a/build", True, layers)
    assert not ignored("a/build", False, layers)
    nested = [("", 0, rules), ("", len("sub/"), parse_gitignore("/top.txt\n"))]
    assert ignored("sub/top.txt", False, nested)


def test_a_hostile_glob_is_matched_in_linear_time() -> None:
    """``re`` backtracks through every split of a long name for each ``*``: this glob
    against a 200-character name took minutes; RE2 answers at once."""
    assert not matches_path("*a*a*a*a*a*a*a*a*a*a*a*b", "a" * 200)
