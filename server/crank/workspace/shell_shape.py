"""What a shell command is, as a shell parser reads it: the test a remembered rule needs.

A rule that allows ``ls`` must allow ``ls -la`` and nothing that merely starts with the
text ``ls``: ``ls && X``, ``ls $(X)``, ``ls `X```, ``ls | sh -c X`` and
``ls > /dev/null & X`` all run X. Text prefixes cannot tell these apart, and regular
expressions over shell syntax miss cases, so the command is parsed with bashlex
(a bash parser in pure Python, pinned in pyproject) and a rule covers it only when
it is one simple command: words, optionally redirections to files, and nothing else
(no ``;``, ``&&``, ``||``, ``|``, ``&``, newline, ``$(..)``, backticks, ``<(..)``/
``>(..)``, no ``X=..`` assignment before the program, which could be ``LD_PRELOAD``).
Whatever bashlex cannot parse, or parses into anything else, is asked, and
``simple_words`` says why, for the question.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_SUBSTITUTIONS = {
    "commandsubstitution": "a command substitution ($(...) or backticks)",
    "processsubstitution": "a process substitution (<(...) or >(...))",
}
_COMPOUND = {
    "list": "more than one command (;, &&, || or &)",
    "pipeline": "a pipeline (|)",
    "compound": "a compound command (braces, subshell or a loop)",
    "if": "an if statement",
    "for": "a for loop",
    "while": "a while loop",
    "until": "an until loop",
    "function": "a function definition",
}


@dataclass(frozen=True)
class Shape:
    """The command's words when it is one simple command, else why it is not."""

    words: tuple[str, ...] | None
    reason: str | None = None


def _nested(node: Any) -> str | None:
    """Why a word or redirection of a simple command makes it more than that."""
    kind = getattr(node, "kind", "")
    if kind in _SUBSTITUTIONS:
        return _SUBSTITUTIONS[kind]
    for child in getattr(node, "parts", None) or ():
        found = _nested(child)
        if found is not None:
            return found
    for attribute in ("output", "input", "command"):
        child = getattr(node, attribute, None)
        if child is not None and hasattr(child, "kind"):
            found = _nested(child)
            if found is not None:
                return found
    return None


def simple_words(command: str) -> Shape:
    """The words of ``command`` if it is one simple command (see the module doc)."""
    if "\n" in command.strip() or "\r" in command:
        return Shape(None, "it has more than one line")
    # Imported here: bashlex builds its parser tables at import (about 110 ms), which
    # every start paid before its first answer; only a rule check needs it.
    import bashlex

    try:
        trees = bashlex.parse(command)
    except Exception as exc:  # bashlex raises ParsingError, NotImplementedError, others
        return Shape(None, f"the shell parser could not be sure what it runs ({exc})")
    if len(trees) != 1:
        return Shape(None, "more than one command")
    tree = trees[0]
    if tree.kind in _COMPOUND:
        return Shape(None, _COMPOUND[tree.kind])
    if tree.kind != "command":
        return Shape(None, f"the shell parser read it as a {tree.kind}")
    words: list[str] = []
    for part in tree.parts:
        if part.kind == "assignment":
            return Shape(None, "it sets a variable for the program (NAME=value before it)")
        why = _nested(part)
        if why is not None:
            return Shape(None, f"it holds {why}")
        if part.kind == "word":
            words.append(part.word)
        elif part.kind == "redirect":
            continue
        else:
            return Shape(None, f"the shell parser found a {part.kind} in it")
    if not words:
        return Shape(None, "it runs no program")
    return Shape(tuple(words))
