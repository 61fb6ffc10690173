"""Glob patterns as regular expressions, with ``/`` treated as a separator.

``*`` and ``?`` stay inside one path segment, ``**`` crosses segments, ``[...]`` is a
character class (``[!x]`` negates) and ``{a,b}`` is alternation. ``fnmatch`` cannot
do this (its ``*`` crosses ``/``), and ``glob.translate`` is Python 3.13+.
"""

from __future__ import annotations

import string
from functools import lru_cache

from .pattern import Pattern, whole_pattern

_PUNCTUATION = frozenset(string.punctuation)


def _escape(char: str) -> str:
    """One character as an RE2 literal (ASCII punctuation is escaped; the rest is
    literal as it is)."""
    return "\\" + char if char in _PUNCTUATION else char


def _translate(pattern: str) -> str:
    out: list[str] = []
    i = 0
    depth = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            close = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^") else i + 1)
            if close == -1:
                out.append(_escape(c))
            else:
                inner = pattern[i + 1 : close]
                if inner[:1] in ("!", "^"):
                    inner = "^" + inner[1:]
                out.append("[" + inner.replace("\\", "\\\\") + "]")
                i = close
        elif c == "{":
            depth += 1
            out.append("(?:")
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
        elif c == "," and depth:
            out.append("|")
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(_escape(pattern[i]))
        else:
            out.append(_escape(c))
        i += 1
    out.extend(")" * depth)
    return "".join(out)


class _Literal:
    """A glob RE2 refuses (an odd class such as ``[z-a]``) matches only itself."""

    def __init__(self, text: str) -> None:
        self.text = text

    def fullmatch(self, name: str) -> bool:
        return name == self.text


class _Suffix:
    """``*.py``: the commonest glob, told by ``str.endswith`` (a walk asks it of every
    file, and a call into RE2 costs some microseconds)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def fullmatch(self, name: str) -> bool:
        return name.endswith(self.text) and "/" not in name


_SPECIAL = frozenset("*?[{\\")


@lru_cache(maxsize=512)
def compile_glob(pattern: str) -> Pattern | _Literal | _Suffix:
    """The glob as a matcher of a whole name or path: a plain name or ``*`` + a plain
    suffix by string comparison, anything else as an RE2 pattern (linear in time, so a
    hostile .gitignore line cannot stall a walk: see ``pattern``)."""
    if not _SPECIAL.intersection(pattern):
        return _Literal(pattern)
    if pattern.startswith("*") and not _SPECIAL.intersection(pattern[1:]) and pattern[1:]:
        return _Suffix(pattern[1:])
    return whole_pattern("(?s)" + _translate(pattern)) or _Literal(pattern)


def matches_path(pattern: str, relative: str) -> bool:
    """Does ``relative`` (posix, no leading slash) match? A pattern without ``/`` is
    matched against the last segment only, as in ``find -name``."""
    if "/" not in pattern:
        return compile_glob(pattern).fullmatch(relative.rsplit("/", 1)[-1])
    return compile_glob(pattern.lstrip("/")).fullmatch(relative)
