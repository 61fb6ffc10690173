"""Finding an edit's ``oldText`` in a document: exactly, or tolerantly.

Models copy text back imperfectly in a few predictable ways: trailing spaces dropped
or added, CRLF turned into LF, typographic quotes and dashes straightened or curled,
non-breaking spaces. The tolerant match forgives exactly those and nothing else (no
indentation changes, no fuzzy similarity), and still demands a single occurrence.
Both texts are already LF-only when they get here.
"""

from __future__ import annotations

import bisect
import difflib
from array import array
from dataclasses import dataclass

_FOLD = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2212": "-",
        "\u00a0": " ",
        "\u2007": " ",
        "\u202f": " ",
    }
)


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    tolerant: bool


class MatchError(Exception):
    """Why an oldText could not be placed; the message is for the model."""


class Positions:
    """Where each character of a normalised text was in the original, kept per line
    (four numbers a line, not one object a character: a 4 MB file stays small)."""

    def __init__(self) -> None:
        self.folded_starts = array("q")
        self.starts = array("q")
        self.kept = array("q")
        self.lengths = array("q")

    def add(self, folded_start: int, start: int, kept: int, length: int) -> None:
        self.folded_starts.append(folded_start)
        self.starts.append(start)
        self.kept.append(kept)
        self.lengths.append(length)

    def __getitem__(self, index: int) -> int:
        line = bisect.bisect_right(self.folded_starts, index) - 1
        offset = index - self.folded_starts[line]
        if offset < self.kept[line]:
            return self.starts[line] + offset
        return self.starts[line] + self.lengths[line]  # the newline after the kept part


def _normalise(text: str) -> tuple[str, Positions]:
    """``text`` with trailing whitespace removed from each line and quotes, dashes and
    odd spaces folded (one character for one), plus where each kept character was."""
    out: list[str] = []
    where = Positions()
    position = 0
    folded = 0
    for line in text.split("\n"):
        kept = line.rstrip()
        out.append(kept.translate(_FOLD))
        where.add(folded, position, len(kept), len(line))
        position += len(line) + 1
        folded += len(kept) + 1
    return "\n".join(out), where


def _occurrences(haystack: str, needle: str, limit: int = 50) -> list[int]:
    found: list[int] = []
    at = haystack.find(needle)
    while at != -1 and len(found) < limit:
        found.append(at)
        at = haystack.find(needle, at + 1)
    return found


def _line_end(text: str, index: int) -> int:
    end = text.find("\n", index)
    return len(text) if end == -1 else end


def find_once(content: str, old: str) -> Span:
    """The single place ``old`` occurs in ``content``; MatchError otherwise."""
    if not old:
        raise MatchError("oldText is empty; give the exact text to replace.")
    exact = _occurrences(content, old)
    if len(exact) == 1:
        return Span(exact[0], exact[0] + len(old), tolerant=False)
    if len(exact) > 1:
        raise MatchError(
            f"oldText occurs {len(exact)} times; include more surrounding lines so it "
            "matches exactly once."
        )
    folded_content, where = _normalise(content)
    folded_old, _ = _normalise(old)
    if not folded_old.strip():
        raise MatchError("oldText was not found (it is only whitespace).")
    loose = _occurrences(folded_content, folded_old)
    if len(loose) > 1:
        raise MatchError(
            f"oldText occurs {len(loose)} times (ignoring trailing whitespace and quote "
            "style); include more surrounding lines so it matches exactly once."
        )
    if not loose:
        raise MatchError("oldText was not found." + nearest_lines(content, old))
    start = where[loose[0]]
    last = loose[0] + len(folded_old) - 1
    end = where[last] + 1
    at_line_end = last + 1 >= len(folded_content) or folded_content[last + 1] == "\n"
    if at_line_end and not folded_old.endswith("\n"):
        end = _line_end(content, end)
    return Span(start, end, tolerant=True)


def nearest_lines(content: str, old: str, most: int = 3) -> str:
    """A hint naming the lines most like oldText's first line, when that is cheap."""
    probe = next((line.strip() for line in old.split("\n") if line.strip()), "")
    lines = content.split("\n")
    if not probe or len(lines) > 20_000:
        return ""
    stripped = [line.strip() for line in lines]
    close = difflib.get_close_matches(probe, stripped, n=most, cutoff=0.6)
    if not close:
        return " No similar line found; read the file again."
    picks = [i for i, line in enumerate(stripped) if line in close][:most]
    shown = "\n".join(f"  {i + 1}: {lines[i]}" for i in picks)
    return (
        f" The most similar lines in the file are:\n{shown}\n"
        "Read the file and copy the text exactly."
    )
