"""The compaction summary: one model call that is no part of any transcript.

The call has its own system prompt and no tools, and the conversation is quoted inside
``<conversation>`` tags as plain text, so the model has nothing to do but summarise (not
continue the work, not answer a question in it). When the rows begin with an earlier
summary, the *update* prompt is used: it hands the earlier summary over separately and
asks for it to be carried forward, so summaries of summaries do not decay.

The request is cut to fit the summarising model's own window before it is sent: tool
results and long texts are clipped harder and harder, and as a last resort the oldest
messages are left out (saying how many), so the call cannot overflow when it is needed
most. A failed or empty reply raises ``SummaryFailed``; nothing is written by this module.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from crank.agent.messages import Message, user_message
from crank.agent.model import AbortSignal, Model, ModelRequest

from .branch_summary import Summary, clip, render_message, reply_text
from .estimate import Calibration, request_chars

MAX_OUTPUT_TOKENS = 4_096
CLIP_STEPS = (2_000, 800, 300, 120)
SAFETY = 0.85
"""Share of the summarising model's free window the request may fill (estimate error)."""

SECTIONS = """\
Write the summary in exactly these sections, in this order:

## Goal
What the user is trying to achieve, in their words where possible.
## Constraints
Requirements, preferences and limits the user stated.
## Progress
### Done
### In progress
### Blocked
## Key decisions
What was decided and why.
## Next steps
What the agent was about to do next.
## Critical context
Exact file paths, function names, commands, error messages and ids that the work
depends on. Copy them exactly; do not paraphrase them.
## Files
### Read
### Modified
"""

SYSTEM = (
    "You write a working summary of a conversation between a user and a coding agent, "
    "so that the agent can carry on from it after the older messages are dropped. You "
    "are not the agent: do not continue the conversation, do not answer any question in "
    "it and do not call tools. Reply with the summary only.\n\n" + SECTIONS
)

UPDATE_SYSTEM = (
    "You keep a working summary of a long conversation between a user and a coding "
    "agent up to date. You are given the existing summary and the messages that came "
    "after it. Preserve everything in the existing summary that is still true: the goal, "
    "constraints, decisions, exact paths, commands and errors. Then add what the new "
    "messages did: move finished work to Done, update In progress, Blocked and Next "
    "steps, and add new files and identifiers. Do not drop a section. You are not the "
    "agent: do not continue the conversation and do not call tools. Reply with the "
    "updated summary only.\n\n" + SECTIONS
)


def _newest_first(messages: Sequence[Message], limit: int) -> Iterator[str]:
    """Each message as quoted text, clipped to ``limit``, from the newest back. Callers
    stop once their room is spent: a session never compacted can hold 50,000 messages,
    and quoting every one of them at every clip step took seconds."""
    return (render_message(message, limit) for message in reversed(messages))


def _whole(messages: Sequence[Message], limit: int, room: int) -> str | None:
    """All the messages quoted at ``limit``, or ``None`` as soon as they overflow ``room``."""
    parts: list[str] = []
    total = -2  # the separators: one fewer than the parts
    for part in _newest_first(messages, limit):
        total += len(part) + 2
        if total > room:
            return None
        parts.append(part)
    return "\n\n".join(reversed(parts))


def _fit(newest_first: Iterable[str], count: int, budget: int) -> str:
    """Newest parts first until the budget is spent; the rest (of ``count``) is counted,
    not hidden."""
    kept: list[str] = []
    total = 0
    for part in newest_first:
        if total + len(part) + 2 > budget and kept:
            kept.append(f"[... {count - len(kept)} earlier messages left out]")
            break
        kept.append(part if total + len(part) <= budget else clip(part, max(budget - total, 0)))
        total += len(part) + 2
    return "\n\n".join(reversed(kept))


def build_request(
    summarizer: Model,
    messages: Sequence[Message],
    *,
    previous: str | None,
    instructions: str | None = None,
    calibration: Calibration | None = None,
) -> ModelRequest:
    """The summary request for ``messages`` (after ``previous``, an earlier summary),
    made to fit ``summarizer.context_window``."""
    calibration = calibration or Calibration()
    window = summarizer.context_window
    output = min(MAX_OUTPUT_TOKENS, max(window // 4, 64))
    system = UPDATE_SYSTEM if previous is not None else SYSTEM
    focus = f"\n\nFocus the summary on: {instructions.strip()}" if instructions else ""

    def frame(previous_text: str, quoted: str) -> str:
        head = f"<existing-summary>\n{previous_text}\n</existing-summary>\n\n" if previous else ""
        return f"{head}<conversation>\n{quoted}\n</conversation>{focus}"

    empty = ModelRequest(system=system, messages=[user_message(frame(previous or "", ""))])
    free_tokens = int((window - output) * SAFETY) - calibration.tokens(request_chars(empty))
    budget = max(int(free_tokens * calibration.chars_per_token), 200)
    previous_text = previous or ""
    if previous is not None and len(previous_text) > budget // 2:
        previous_text = clip(previous_text, budget // 2)
    room = budget - len(previous_text)
    limit_tokens = int((window - output) * SAFETY)
    while True:
        request = ModelRequest(
            system=system,
            messages=[user_message(frame(previous_text, _quote_within(messages, room)))],
            tools=[],
            max_output_tokens=output,
        )
        if calibration.tokens(request_chars(request)) <= limit_tokens or room <= 200:
            return request
        room = int(room * 0.75)  # JSON escaping made it longer than the plain text


def _quote_within(messages: Sequence[Message], room: int) -> str:
    """The messages as text in ``room`` characters: clipped harder, then the oldest left out."""
    for limit in CLIP_STEPS:
        quoted = _whole(messages, limit, room)
        if quoted is not None:
            return quoted
    return _fit(_newest_first(messages, CLIP_STEPS[-1]), len(messages), room)


async def summarize(
    summarizer: Model,
    request: ModelRequest,
    signal: AbortSignal | None = None,
) -> Summary:
    """Make the call; the reply's text, stripped, and its usage. Raises ``SummaryFailed``."""
    return await reply_text(summarizer, request, signal, "the compaction summary")
