"""Glob patterns as regular expressions, with ``/`` treated as a separator.

``*`` and ``?`` stay inside one path segment, ``**`` crosses segments, ``[...]`` is a
character class (``[!x]`` negates) and ``{a,b}`` is alternation. ``fnmatch`` cannot
do this (its ``*`` crosses ``/``), and ``glob.translate`` is Python 3.13+.
"""

from __future__ import annotations

import re
from functools import lru_cache


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
                out.append(re.escape(c))
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
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    out.extend(")" * depth)
    return "".join(out)


@lru_cache(maxsize=512)
def compile_glob(pattern: str) -> re.Pattern[str]:
    return re.compile(_translate(pattern) + r"\Z", re.DOTALL)


def matches_path(pattern: str, relative: str) -> bool:
    """Does ``relative`` (posix, no leading slash) match? A pattern without ``/`` is
    matched against the last segment only, as in ``find -name``."""
    if "/" not in pattern:
        return compile_glob(pattern).match(relative.rsplit("/", 1)[-1]) is not None
    return compile_glob(pattern.lstrip("/")).match(relative) is not None
