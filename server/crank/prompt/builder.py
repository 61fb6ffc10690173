"""The system prompt builder: one pure function from what is really there to one string.

The prompt is computed, never written by hand, so it cannot claim a tool that is not
enabled or forget a project's instructions. ``build_system_prompt`` reads no clock and
no disk, changes none of its arguments and orders everything by the order it was given
(never by set or hash order), so equal arguments give equal bytes in every process:
the front of every request stays byte-stable and provider prefix caches keep working.

Sections, in this fixed order, separated by one blank line:

1. an opening of our own that names no tool;
2. ``- name: snippet`` for each tool with a snippet, in the order given;
3. every tool's guidelines, each once, first seen first;
4. each context file as ``<project_instructions path="...">``, its text unchanged,
   ``</project_instructions>``, in the order given (broad to specific);
5. the skills index (name, description, path; never a line of a body), only when a
   tool named ``read`` is enabled, since the model can only follow it by reading;
   hidden skills are not in it (they are for the user to invoke by hand);
6. exactly ``Current date: YYYY-MM-DD`` then ``Current working directory: <path>``,
   with nothing after them.

A source map travels with the text: which tool, file, skill or setting each section
came from, plus whatever the loader skipped and why, as plain camelCase dicts.
"""

from __future__ import annotations

import datetime
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, TypedDict, cast

from crank.agent.tools import Tool

SourceKind = Literal["tool", "contextFile", "skill", "setting", "skipped"]


class Source(TypedDict):
    """One entry of the source map, as ``crank/systemPrompt`` returns it."""

    kind: SourceKind
    path: NotRequired[str]
    name: NotRequired[str]
    reason: NotRequired[str]


@dataclass(frozen=True)
class ContextFile:
    """A context file already read from disk: its display path and its text."""

    path: str
    text: str


@dataclass(frozen=True)
class Skill:
    """A skill's index entry: what its front matter says and where its file is.
    A ``hidden`` skill (front matter ``hidden: true``) is left out of the index but can
    still be invoked by hand (``/skill:name``)."""

    name: str
    description: str
    path: str
    hidden: bool = False


@dataclass(frozen=True)
class SystemPrompt:
    """The built prompt. ``hash`` is the sha256 hex digest of ``text`` as UTF-8."""

    text: str
    hash: str
    sources: tuple[Source, ...]

    def to_json(self) -> dict[str, Any]:
        """The ``crank/systemPrompt`` result: fresh plain data the caller may keep."""
        return {"text": self.text, "hash": self.hash, "sources": self.source_list()}

    def source_list(self) -> list[dict[str, Any]]:
        return [dict(source) for source in self.sources]


OPENING = (
    "You are Crank, a coding agent working on the user's project from inside their "
    "development environment. Work step by step with the tools listed below, look at "
    "the project before changing it, check your work, and say plainly what you did "
    "and what you could not do."
)
TOOLS_HEADING = "Available tools:"
GUIDELINES_HEADING = "Guidelines:"
SKILLS_HEADING = (
    "Skills: playbooks this project and user keep for particular tasks. When a task "
    "matches a skill's description, read that skill's file with the read tool before "
    "you start, and follow it."
)
READ_TOOL = "read"
HIDDEN = "a hidden skill (hidden: true): the user can invoke it, the index leaves it out"


def one_line(text: str) -> str:
    """Collapse all whitespace, so a value meant for one line stays on one line."""
    return " ".join(text.split())


def _attribute(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;")


def _tool_sections(tools: Sequence[Tool], sources: list[Source]) -> list[str]:
    tool_lines: list[str] = []
    guidelines: list[str] = []
    seen: set[str] = set()  # membership only; order lives in ``guidelines``
    for tool in tools:
        contributed = False
        if tool.snippet and one_line(tool.snippet):
            tool_lines.append(f"- {tool.name}: {one_line(tool.snippet)}")
            contributed = True
        for guideline in tool.guidelines:
            line = one_line(guideline)
            if line and line not in seen:
                seen.add(line)
                guidelines.append(f"- {line}")
                contributed = True
        if contributed:
            sources.append({"kind": "tool", "name": tool.name})
    sections: list[str] = []
    if tool_lines:
        sections.append("\n".join([TOOLS_HEADING, *tool_lines]))
    if guidelines:
        sections.append("\n".join([GUIDELINES_HEADING, *guidelines]))
    return sections


def _context_section(context: ContextFile) -> str:
    text = context.text
    if text and not text.endswith("\n"):
        text += "\n"
    opening = f'<project_instructions path="{_attribute(context.path)}">'
    return f"{opening}\n{text}</project_instructions>"


def _skills_section(skills: Sequence[Skill], sources: list[Source]) -> str:
    lines = [SKILLS_HEADING]
    for skill in skills:
        lines.append(
            f"- {one_line(skill.name)}: {one_line(skill.description)} (file: {skill.path})"
        )
        sources.append({"kind": "skill", "name": skill.name, "path": skill.path})
    return "\n".join(lines)


def build_system_prompt(
    tools: Sequence[Tool],
    context_files: Sequence[ContextFile],
    skills: Sequence[Skill],
    cwd: str,
    today: datetime.date,
    *,
    skipped: Sequence[Source] = (),
) -> SystemPrompt:
    """Build the prompt from the enabled tools, the context files (broad to specific),
    the skills (in index order), the working directory and today's date.

    ``skipped`` is what the loader left out (untrusted, broken, overridden); it is only
    copied into the source map, never into the text.
    """
    sources: list[Source] = []
    sections = [OPENING, *_tool_sections(tools, sources)]
    hidden = [skill for skill in skills if skill.hidden]
    skills = [skill for skill in skills if not skill.hidden]
    for context in context_files:
        sections.append(_context_section(context))
        sources.append({"kind": "contextFile", "path": context.path})
    if skills:
        if any(tool.name == READ_TOOL for tool in tools):
            sections.append(_skills_section(skills, sources))
        else:
            for skill in skills:
                reason = "no read tool is enabled, so the skills index is left out"
                sources.append({"kind": "skipped", "path": skill.path, "reason": reason})
    sections.append(f"Current date: {today.isoformat()}\nCurrent working directory: {cwd}")
    sources.append({"kind": "setting", "name": "date"})
    sources.append({"kind": "setting", "name": "cwd", "path": cwd})
    for skill in hidden:
        sources.append({"kind": "skipped", "path": skill.path, "reason": HIDDEN})
    sources.extend(cast(Source, dict(entry)) for entry in skipped)
    text = "\n\n".join(sections)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return SystemPrompt(text=text, hash=digest, sources=tuple(sources))
