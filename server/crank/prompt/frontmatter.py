"""YAML front matter: the ``---`` block that opens a skill or a prompt template."""

from __future__ import annotations

from typing import Any

import yaml


def split_front_matter(text: str) -> tuple[Any, str] | str:
    """``(front matter data, body)`` of a file that starts with a ``---`` block, or a
    sentence saying what is wrong. The body is everything after the closing line."""
    lines = text.removeprefix("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return "no YAML front matter (the file must start with a '---' line)"
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        return "front matter is not closed by a '---' line"
    try:
        data = yaml.safe_load("".join(lines[1:end]))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        return f"front matter is not valid YAML{where}"
    return data, "".join(lines[end + 1 :])
