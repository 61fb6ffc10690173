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

from collections.abc import Callable, Sequence

from crank.agent.events import Event
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
    target: str, messages: Sequence[Message], changed: Sequence[str], *, ended: bool = True
) -> str | None:
    """The sentence for a fix run whose ``messages`` (its own, in order) and ``changed``
    paths (workspace-relative) leave ``target`` as it was; None when there is nothing
    to say. At the run's end (``ended``): said unless ``target`` changed or the run was
    aborted or failed. Before it: said only when the newest reply's calls all failed
    (the model is stuck, not at work), so the user hears within one reply."""
    if target in changed:
        return None
    replies = [m for m in messages if m["role"] == "assistant"]
    if ended and replies and replies[-1].get("stopReason") in ("aborted", "error"):
        return None
    calls = [call for reply in replies for call in tool_calls(reply)]
    failures = [
        f"{m.get('toolName') or 'a tool'} ({_first_line(_result_text(m))})"
        for m in messages
        if m["role"] == "toolResult" and m.get("isError")
    ]
    if not ended:
        newest = tool_calls(replies[-1]) if replies else []
        last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=-1)
        results = [m for m in messages[last + 1 :] if m["role"] == "toolResult"]
        if not newest or len(results) < len(newest) or not all(m.get("isError") for m in results):
            return None
    head = (
        f"Fix This File left {target} unchanged: "
        if ended
        else f"Fix This File has not changed {target} yet: "
    )
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


class FixWatch:
    """One fix run, heard event by event (``WorkspaceHost`` forwards its run's events):
    at the first ``turn_end`` whose calls all failed, and at ``agent_settled``, the
    sentence of ``unchanged_reason`` is said once each through ``say``. ``record`` and
    ``changed`` read the transcript and the run's changed paths as they are now."""

    def __init__(
        self,
        target: str,
        start: int,
        record: Callable[[], Sequence[Message]],
        changed: Callable[[], list[str]],
        say: Callable[[str], None],
    ) -> None:
        self._target, self._start = target, start
        self._record, self._changed, self._say = record, changed, say
        self._warned = False

    def hear(self, event: Event) -> bool:
        """Take one event of the run; False once the run has settled (drop the watch)."""
        kind = event["type"]
        if kind not in ("turn_end", "agent_settled"):
            return True
        ended = kind == "agent_settled"
        if ended or not self._warned:
            messages = self._record()[self._start :]
            reason = unchanged_reason(self._target, messages, self._changed(), ended=ended)
            if reason is not None:
                self._warned = True
                self._say(reason)
        return not ended


__all__ = ["FixWatch", "unchanged_reason"]
