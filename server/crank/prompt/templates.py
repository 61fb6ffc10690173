"""Prompt templates: ``.crank/prompts/<name>.md`` files the user runs as ``/name args``.

A template is Markdown with optional YAML front matter (``description``,
``argument-hint``, both strings). Its name is the file name without ``.md``, and must
be made of letters, digits, ``_``, ``.`` and ``-`` (the command syntax; a ``:`` is
reserved for ``skill:``). Without a ``description`` the first non-empty line of the
body describes it.

Arguments (``expand_template``), a small shell-like syntax:

- the text after the name is split like a shell command line (``"two words"`` is one
  argument; unbalanced quotes fall back to splitting on whitespace);
- ``$1`` ... ``$9``, ``$10`` ...: that argument, empty when it was not given;
- ``$@`` and ``$ARGUMENTS``: every argument, as typed (the text after the name);
- ``$$``: a literal ``$``;
- a template that uses none of these gets the arguments, if any, appended after a
  blank line, so nothing the user typed is dropped.

Pure functions; the loader reads the files and applies trust.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from .builder import one_line
from .frontmatter import split_front_matter

TEMPLATE_SUFFIX = ".md"
TEMPLATE_NAME = re.compile(r"[A-Za-z0-9_.-]+")
"""What a template's name may be made of (its file name without ``.md``)."""
DESCRIPTION_CHARS = 80
"""A description taken from the body's first line is cut to this many characters."""
_PLACEHOLDER = re.compile(r"\$(\$|@|ARGUMENTS\b|[0-9]+)")


@dataclass(frozen=True)
class PromptTemplate:
    """One template as loaded: its name, what describes it, its file and its body."""

    name: str
    description: str
    path: str
    body: str
    argument_hint: str | None = None


def _first_line(body: str) -> str:
    for line in body.splitlines():
        text = one_line(line.lstrip("#").strip())
        if text:
            return text if len(text) <= DESCRIPTION_CHARS else text[: DESCRIPTION_CHARS - 1] + "…"
    return ""


def parse_template(path: Path, text: str) -> PromptTemplate | str:
    """The template in ``text`` (the file at ``path``), or a sentence saying what is
    wrong with it."""
    name = path.name.removesuffix(TEMPLATE_SUFFIX)
    if not TEMPLATE_NAME.fullmatch(name):
        return (
            f"the name {name!r} cannot be typed as a command "
            "(use letters, digits, '_', '.' and '-')"
        )
    body = text.removeprefix("\ufeff")
    description: str | None = None
    hint: str | None = None
    if body.startswith("---"):
        split = split_front_matter(body)
        if isinstance(split, str):
            return split
        data, body = split
        if data is not None and not isinstance(data, dict):
            return "front matter must be a mapping"
        data = data or {}
        for key in ("description", "argument-hint"):
            value = data.get(key)
            if value is not None and not isinstance(value, str):
                return f"front matter '{key}' must be a string"
        description = one_line(data["description"]) if data.get("description") else None
        hint = one_line(data["argument-hint"]) if data.get("argument-hint") else None
    body = body.strip("\n")
    if not body.strip():
        return "the template is empty"
    return PromptTemplate(
        name=name,
        description=description or _first_line(body),
        path=str(path),
        body=body,
        argument_hint=hint,
    )


def split_arguments(args: str) -> list[str]:
    """The arguments as a shell would split them; on unbalanced quotes, by whitespace."""
    try:
        return shlex.split(args)
    except ValueError:
        return args.split()


def expand_template(body: str, args: str) -> str:
    """The body with its placeholders replaced by ``args`` (the text after the name)."""
    args = args.strip()
    positional = split_arguments(args)
    used = False

    def replace(match: re.Match[str]) -> str:
        nonlocal used
        token = match.group(1)
        if token == "$":
            return "$"
        used = True
        if token in ("@", "ARGUMENTS"):
            return args
        index = int(token)
        return positional[index - 1] if 1 <= index <= len(positional) else ""

    text = _PLACEHOLDER.sub(replace, body)
    if not used and args:
        text += "\n\n" + args
    return text
