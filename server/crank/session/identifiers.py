"""The identifiers a summary must not lose, found and checked in code.

Summaries drop exact values (a path, an issue number, a commit), and a lost one can
make the agent redo or undo work. So the values the agent *used* (tool call arguments)
and that tools *reported* (tool results) are collected by pattern, and any the summary
does not contain verbatim is appended under a heading of its own. Patterns:
URLs, file paths (with a slash, or a name with an extension), issue/PR numbers
(``#123``), error codes (``E0425``, ``TS2345``, ``ERR_SOMETHING``, ``ENOENT``-style),
and hex ids of 7 to 40 digits that mix letters and digits.

The list is capped (newest first, the agent's own arguments before what results
reported), and when the cap leaves some out the heading says so, never dropping them
silently. The search stops once the cap is passed: a session never compacted can hold
50,000 messages, and running the patterns over every result took seconds (6.6 s for
that many) where the forty newest missing values are found a little past what the
summariser was shown.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence

from crank.agent.messages import Message, tool_calls

HEADING = "## Identifiers the summary must keep"
MAX_IDENTIFIERS = 40
MAX_SCAN_CHARS = 20_000
"""Only the first characters of each tool result are scanned (a file read is mostly code)."""

_URL = re.compile(r"https?://[^\s\"'<>()\[\]{}`,]+[^\s\"'<>()\[\]{}`,.;:!?]")
_PATH = re.compile(
    r"(?<![\w/.~-])(?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]*\w"
    r"|(?<![\w/.-])[A-Za-z_][\w-]*\.[A-Za-z][A-Za-z0-9]{0,7}\b(?![(/])"
)
_ISSUE = re.compile(r"(?<![\w&])#\d{1,7}\b")
_ERROR_CODE = re.compile(r"\b(?:[A-Z]{1,4}\d{3,5}|E[A-Z]{3,9}|ERR_[A-Z0-9_]{2,})\b")
_HEX = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")
_ERRNO_WORDS = frozenset({"ERROR", "EMPTY", "EXIT", "ELSE", "ENTRY", "EVENT", "EXPECTED"})
_NOT_PATHS = frozenset({"e.g", "i.e", "etc", "vs"})


def _found(text: str) -> list[str]:
    found: list[str] = []
    urls = _URL.findall(text)
    found.extend(urls)
    rest = _URL.sub(" ", text)
    for match in _PATH.findall(rest):
        if match.strip("./") and match.lower() not in _NOT_PATHS and not match[-1].isdigit():
            found.append(match)
    found.extend(_ISSUE.findall(rest))
    found.extend(c for c in _ERROR_CODE.findall(rest) if c not in _ERRNO_WORDS)
    found.extend(_HEX.findall(rest))
    return found


def _strings(value: object) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def found_in(messages: Sequence[Message]) -> Iterator[str]:
    """Identifiers used in calls and reported by results, newest first, repeats and
    all: every call's arguments before any result's text. Lazy, so a caller that has
    enough reads no further back."""
    for message in reversed(messages):
        for call in tool_calls(message):
            for text in _strings(call["arguments"]):
                yield from _found(text[:MAX_SCAN_CHARS])
    for message in reversed(messages):
        if message["role"] == "toolResult":
            yield from _found(message["content"][:MAX_SCAN_CHARS])


def collect_from_text(text: str) -> list[str]:
    """Identifiers written in free text (an earlier summary), first seen first."""
    return list(dict.fromkeys(_found(text)))


def with_identifiers(summary: str, identifiers: Iterable[str]) -> str:
    """``summary`` plus a section naming the identifiers it forgot, the first
    ``MAX_IDENTIFIERS`` of them in the order given; past those the heading says older
    ones were not listed, and ``identifiers`` is read no further."""
    lost: list[str] = []
    seen: set[str] = set()
    for item in identifiers:
        if item in seen:
            continue
        seen.add(item)
        if item not in summary:
            lost.append(item)
            if len(lost) > MAX_IDENTIFIERS:
                break
    if not lost:
        return summary
    heading = HEADING
    if len(lost) > MAX_IDENTIFIERS:
        heading += " (older ones not listed)"
    lines = "\n".join(f"- {item}" for item in lost[:MAX_IDENTIFIERS])
    return f"{summary.rstrip()}\n\n{heading}\n{lines}"
