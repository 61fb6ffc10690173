"""Summaries of an abandoned branch, written by a separate model call.

Going back does not rewind the workspace: the files the old attempt wrote are still
written. So the abandoned messages (those after the fork) are quoted to a model with
its own system prompt and no tools, and the reply becomes a ``branchSummary`` entry on
the new branch. The quote is capped (each tool result and each text cut, then the whole
kept under ``MAX_INPUT_CHARS`` from the newest end) so the call cannot overflow exactly
when it is needed. The summary is checked in code: any file the old attempt changed
(``path`` of a write/edit call) that the model forgot is appended by name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from crank.agent.messages import Message, Usage, text_of, tool_calls, user_message
from crank.agent.model import AbortSignal, Model, ModelRequest

from .deferred import messages_of
from .entries import Entry
from .errors import SummaryFailed

MAX_INPUT_CHARS = 60_000
MAX_PART_CHARS = 2_000
MAX_OUTPUT_TOKENS = 2_048
WRITING_TOOLS = ("write", "edit")

SYSTEM = (
    "You write a short record of an attempt that a coding agent has abandoned; the "
    "conversation has gone back to an earlier point and will try again. Files the "
    "attempt changed are still changed. Say, in plain sentences or a short list: what "
    "was tried, what was learned, which files were changed and how, and what is left in "
    "a half-done state. Do not continue the work and do not call tools."
)


def changed_files(messages: list[Message]) -> list[str]:
    """Paths passed to write/edit calls, first seen first."""
    paths: list[str] = []
    for message in messages:
        for call in tool_calls(message):
            path = call["arguments"].get("path")
            if call["name"] in WRITING_TOOLS and isinstance(path, str) and path not in paths:
                paths.append(path)
    return paths


def abandoned_messages(
    path: Path, old_branch: list[Entry], new_branch: list[Entry]
) -> list[Message]:
    """Messages on ``old_branch`` (of the file at ``path``) after the last entry it
    shares with ``new_branch``."""
    shared = {entry["id"] for entry in new_branch}
    fork = max((i for i, entry in enumerate(old_branch) if entry["id"] in shared), default=-1)
    return messages_of(path, [e for e in old_branch[fork + 1 :] if e["type"] == "message"])


def clip(text: str, limit: int = MAX_PART_CHARS) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit} more characters cut]"


def render_message(message: Message, limit: int = MAX_PART_CHARS) -> str:
    """One message as plain text for people and for summary prompts, each part clipped."""
    if message["role"] == "user":
        return f"user: {clip(message['content'], limit)}"
    if message["role"] == "toolResult":
        status = " (error)" if message["isError"] else ""
        return f"result {message['toolName']}{status}: {clip(message['content'], limit)}"
    lines = [f"assistant: {clip(text_of(message), limit)}"]
    for call in tool_calls(message):
        arguments = clip(json.dumps(call["arguments"], ensure_ascii=False), min(limit, 500))
        lines.append(f"  call {call['name']} {arguments}")
    if message.get("errorMessage"):
        lines.append(f"  [{message['stopReason']}: {message.get('errorMessage')}]")
    return "\n".join(lines)


def render_quote(messages: list[Message], limit: int = MAX_INPUT_CHARS) -> str:
    """The abandoned messages as plain text, newest kept when the total is too long."""
    parts: list[str] = []
    total = 0
    for message in reversed(messages):
        part = render_message(message)
        if total + len(part) > limit:
            parts.append(f"[... {len(messages) - len(parts)} earlier messages left out]")
            break
        parts.append(part)
        total += len(part) + 2
    return "\n\n".join(reversed(parts))


@dataclass(frozen=True)
class Summary:
    """A summary's text and what its model call cost (kept with the entry it becomes,
    so the session's totals include the calls made to summarise it)."""

    text: str
    usage: Usage


async def reply_text(
    model: Model, request: ModelRequest, signal: AbortSignal | None, what: str
) -> Summary:
    """The stripped text of one reply to ``request`` and its usage; ``SummaryFailed``
    (naming ``what``) if the call failed or came back empty, so nothing is ever
    mistaken for a summary."""
    reply = None
    async for event in model.stream(request, signal or AbortSignal()):
        if event["type"] == "done":
            reply = event["message"]
    if reply is None or reply["stopReason"] in ("error", "aborted"):
        reason = reply.get("errorMessage", reply["stopReason"]) if reply else "no reply"
        raise SummaryFailed(f"{what} could not be made ({reason}); nothing was written")
    text = text_of(reply).strip()
    if not text:
        raise SummaryFailed(f"{what} came back empty; nothing was written")
    return Summary(text, reply["usage"])


async def summarize_branch(
    model: Model, messages: list[Message], signal: AbortSignal | None = None
) -> Summary:
    """One model call, no tools; raises ``SummaryFailed`` (nothing written) on failure."""
    files = changed_files(messages)
    prompt = "The abandoned attempt:\n\n" + render_quote(messages)
    if files:
        prompt += "\n\nFiles it changed: " + ", ".join(files)
    request = ModelRequest(
        system=SYSTEM,
        messages=[user_message(prompt)],
        tools=[],
        max_output_tokens=MAX_OUTPUT_TOKENS,
    )
    summary = await reply_text(model, request, signal, "the branch summary")
    missing = [path for path in files if path not in summary.text]
    if missing:
        text = summary.text + "\n\nFiles changed on the abandoned branch: " + ", ".join(files)
        return Summary(text, summary.usage)
    return summary
