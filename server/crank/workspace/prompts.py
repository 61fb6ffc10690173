"""User-message text the workspace writes for the user: attached context and the
fix-this-file request. Files are read from the editor's buffer when open."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crank.agent.tools import truncate
from crank.tools import Documents

PROBLEMS_SHOWN = 50
"""The most diagnostics one ``@problems`` item carries to the model (the rest counted)."""
PROBLEM_CHARS = 500
"""The longest one diagnostic's message is sent (a linter can write pages)."""


@dataclass(frozen=True)
class ContextRef:
    """One ``context`` item of a prompt: a file, a range of its lines, or (with
    ``diagnostics``, the editor's LSP diagnostics for it) its problems."""

    path: Path
    range: dict[str, Any] | None = None
    diagnostics: tuple[dict[str, Any], ...] | None = None


def display_path(root: Path, path: Path) -> str:
    """``path`` as the workspace names it: relative to ``root`` when inside it."""
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)


def _text_of(documents: Documents, path: Path) -> str | None:
    text = documents.text_of(path)
    if text is not None:
        return text
    try:
        return path.read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _lines(range_: dict[str, Any] | None) -> tuple[int, int] | None:
    if not range_:
        return None
    start = int(range_["start"]["line"]) + 1
    end = int(range_["end"]["line"]) + 1
    return start, max(start, end)


def context_text(root: Path, documents: Documents, items: Sequence[ContextRef]) -> str:
    """Attached files (or line ranges of them, or their problems), appended after the
    user's text."""
    parts: list[str] = []
    for item in items:
        resolved = item.path.resolve()
        name = display_path(root, resolved)
        if item.diagnostics is not None:
            parts.append(problems_text(name, item.diagnostics))
            continue
        range_ = item.range
        text = _text_of(documents, resolved)
        if text is None:
            parts.append(f'<context path="{name}">(the file could not be read)</context>')
            continue
        lines = _lines(range_)
        attribute = ""
        if lines is not None:
            text = "\n".join(text.split("\n")[lines[0] - 1 : lines[1]])
            attribute = f' lines="{lines[0]}-{lines[1]}"'
        cut = truncate(text, "head")
        body = cut.text + ("\n[truncated; read the file for the rest]" if cut.truncated else "")
        parts.append(f'<context path="{name}"{attribute}>\n{body}\n</context>')
    return "".join("\n\n" + part for part in parts)


_SEVERITY = {1: "error", 2: "warning", 3: "information", 4: "hint"}


def problems_text(name: str, diagnostics: Sequence[dict[str, Any]]) -> str:
    """``@problems``: the editor's diagnostics for one file, one line each (line, severity,
    message, source), at most ``PROBLEMS_SHOWN``, each message cut at ``PROBLEM_CHARS``."""
    if not diagnostics:
        return f'<problems path="{name}">(the editor reports no problems in this file)</problems>'
    lines = []
    for item in diagnostics[:PROBLEMS_SHOWN]:
        line = int(item["range"]["start"]["line"]) + 1
        severity = _SEVERITY.get(int(item.get("severity") or 1), "error")
        message = " ".join(str(item["message"]).split())
        if len(message) > PROBLEM_CHARS:
            message = message[:PROBLEM_CHARS] + "..."
        source = f" ({item['source']})" if item.get("source") else ""
        lines.append(f"line {line}: {severity}: {message}{source}")
    if len(diagnostics) > PROBLEMS_SHOWN:
        lines.append(f"[{len(diagnostics) - PROBLEMS_SHOWN} more not shown]")
    body = "\n".join(lines)
    return f'<problems path="{name}">\n{body}\n</problems>'


def fix_file_text(
    root: Path,
    path: Path,
    diagnostics: Sequence[dict[str, Any]],
    range_: dict[str, Any] | None,
    instruction: str | None,
) -> str:
    """The prompt of ``crank.fixFile``: the file, its diagnostics with their ranges and
    messages, any range and instruction, and how to go about it."""
    name = display_path(root, path.resolve())
    lines = [f"Fix the problems in the file {name}."]
    if diagnostics:
        lines.append("The editor reports these diagnostics:")
        for diag in diagnostics:
            start, end = diag["range"]["start"], diag["range"]["end"]
            where = f"line {start['line'] + 1}, column {start['character'] + 1}"
            if (end["line"], end["character"]) != (start["line"], start["character"]):
                where += f" to line {end['line'] + 1}, column {end['character'] + 1}"
            severity = _SEVERITY.get(diag.get("severity") or 1, "error")
            source = f" ({diag['source']}" if diag.get("source") else ""
            code = diag.get("code")
            if source and code is not None:
                source += f" {code}"
            source += ")" if source else ""
            lines.append(f"- {where}: {severity}: {diag['message']}{source}")
    else:
        lines.append("The editor reported no diagnostics: review the whole file for errors.")
    span = _lines(range_)
    if span is not None:
        lines.append(f"Focus on lines {span[0]}-{span[1]}.")
    if instruction:
        lines.append(f"Instruction: {instruction}")
    lines.append("Read the file first, then fix it with the smallest edits that work.")
    return "\n".join(lines)
