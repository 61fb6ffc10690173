"""What a "Fix This File" run did to its file, said in one sentence when it did nothing.

The editor's user asked for one file to be fixed and watches the file, not the
transcript. A model that answers in prose, calls a tool that fails (a small local model
reading a path it made up), or changes some other file leaves the file as it was, and
without a word the user is left guessing whether Crank is still at it. So when such a
run ends, the workspace says that the file is unchanged and why, from what the run
itself holds: its replies' tool calls and their results, and the files its changes
record names. A run the user aborted or one that failed is not told about again: the
abort is theirs and the failure has its own event.
"""

from __future__ import annotations

from collections.abc import Sequence

from crank.agent.messages import Message, text_of, tool_calls

MOST_FAILURES = 3
"""The failed calls named in the sentence (the rest counted)."""
ERROR_CHARS = 120
"""How much of one failed call's first line is quoted."""


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "no message"
    return line if len(line) <= ERROR_CHARS else line[: ERROR_CHARS - 3] + "..."


def _result_text(message: Message) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


def unchanged_reason(
    target: str, messages: Sequence[Message], changed: Sequence[str]
) -> str | None:
    """None when ``target`` (a workspace-relative path) is among the run's ``changed``
    paths or the run ended by abort or error; else the sentence that says so and why.
    ``messages`` are the run's own, in order."""
    if target in changed:
        return None
    replies = [m for m in messages if m["role"] == "assistant"]
    if replies and replies[-1].get("stopReason") in ("aborted", "error"):
        return None
    head = f"Fix This File left {target} unchanged: "
    calls = [call for reply in replies for call in tool_calls(reply)]
    failures = [
        f"{m.get('toolName') or 'a tool'} ({_first_line(_result_text(m))})"
        for m in messages
        if m["role"] == "toolResult" and m.get("isError")
    ]
    others = [path for path in changed if path != target]
    if not calls:
        said = next((text_of(r) for r in reversed(replies) if text_of(r).strip()), "")
        why = "the model answered without calling a tool, so nothing was edited"
        if said:
            why += f' (it said: "{_first_line(said)}")'
        return head + why + "."
    parts: list[str] = []
    if others:
        parts.append(f"the model changed {', '.join(others[:MOST_FAILURES])} instead")
    if failures:
        named = "; ".join(failures[:MOST_FAILURES])
        more = len(failures) - MOST_FAILURES
        count = f"{len(failures)} of its {len(calls)} tool calls failed"
        parts.append(f"{count}: {named}" + (f"; and {more} more" if more > 0 else ""))
    if not parts:
        names = ", ".join(dict.fromkeys(call["name"] for call in calls))
        parts.append(f"its tool calls ({names}) changed nothing")
    return head + "; ".join(parts) + "."


__all__ = ["unchanged_reason"]
