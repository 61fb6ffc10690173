"""How big the next request is, without a tokenizer.

Two sources, each covering what the other cannot see (docs/context.md):

- the provider's own count, ``usage`` on the newest reply, exact for the request that
  produced it; a count measured before a compaction that now stands in front of it is
  stale (the view it described is gone) and is skipped;
- an estimate for everything after it, from characters, at a ratio of characters per
  token *learned* from reported usage (``Calibration``), because code and JSON run to
  far fewer characters per token than the English rule of four.

Sizes are measured on the same canonical JSON the request is rendered as (compact, key
order as built), so "characters" means the same thing everywhere in this package.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from crank.agent import wiretext
from crank.agent.lineage import kept, shared_prefix
from crank.agent.messages import Message, Usage, images_of
from crank.agent.model import ModelRequest, ToolSpec

from .replay import COMPACTION_PREFIX
from .usage_totals import usage_count

DEFAULT_CHARS_PER_TOKEN = 3.0
"""Before any usage was reported: low on purpose (code and JSON), so the estimate errs high."""
MIN_CHARS_PER_TOKEN = 1.0
MAX_CHARS_PER_TOKEN = 8.0


def json_chars(value: object) -> int:
    """The characters of ``value`` as compact JSON with its text as itself (what a
    request body holds), encoded in C (``wiretext.dumps_compact``): a resumed record is
    measured whole when its context is first shown, and the standard library's encoder
    took most of three seconds over 50,000 messages."""
    body = wiretext.dumps_compact(value)
    return len(body) if body.isascii() else len(body.decode("utf-8"))


IMAGE_CHARS = 4_800
"""What one image counts for, in characters: about 1,600 tokens, the most Anthropic
charges for an image it has not downscaled (OpenAI's high detail is similar). Its
base64 bytes are never counted as text: a 1 MB screenshot is not 1.3M characters of
context."""


def message_chars(message: Message) -> int:
    images = images_of(message)
    if not images:
        return json_chars(message)
    text: dict[str, object] = {k: v for k, v in message.items() if k != "images"}
    return json_chars(text) + IMAGE_CHARS * len(images)


Chars = Callable[[Message], int]
"""How a caller measures one message: ``message_chars``, or a ``SizeCache``'s ``chars``."""


class SizeCache:
    """``message_chars`` remembered per message object.

    A message in the record is never changed once it is there (the Harness appends
    finished messages; the view and the policies build new objects for what they
    change), so its size is computed once instead of on every request of a long run,
    where the Housekeeper measures the whole view several times a turn. An entry holds
    its message, so an id is never mistaken for another object's; ``prune`` drops the
    messages that are in no view any more (the notes of cleared results, a replaced
    transcript)."""

    def __init__(self) -> None:
        self._known: dict[int, tuple[Message, int]] = {}

    def chars(self, message: Message) -> int:
        known = self._known.get(id(message))
        if known is not None and known[0] is message:
            return known[1]
        size = message_chars(message)
        self._known[id(message)] = (message, size)
        return size

    def prune(self, *live: Sequence[Message]) -> None:
        """Forget every message not in ``live``, once the cache has doubled past it."""
        count = sum(len(messages) for messages in live)
        if len(self._known) <= 2 * count + 64:
            return
        keep = {id(message) for messages in live for message in messages}
        self._known = {key: value for key, value in self._known.items() if key in keep}

    def __len__(self) -> int:
        return len(self._known)


class RunningSize:
    """The summed sizes of successive views that share most of their messages, and the
    newest reply in each that carries reported usage.

    Consecutive requests of a run send the same messages plus a few new ones (and now
    and then a cleared result's note in place of the result), so both are kept per
    position and only what follows the first message that differs is looked at again.
    Finding that message costs only what the lists' lineage does not vouch for
    (``shared_prefix``: the newest turn's few messages, for the request path). A long
    run therefore costs the same per turn at its end as at its start, with or
    without usage (without it, every turn used to scan the whole view twice over)."""

    def __init__(self, chars: Chars) -> None:
        self._chars = chars
        self._messages: Sequence[Message] = []
        self._sums: list[int] = []
        self._anchors: list[int] = []
        """Per position: the newest usage-bearing reply at or before it, or -1."""
        self._source: Sequence[Message] | None = None
        """The list last measured (lists handed here are not changed afterwards)."""

    def measured(self, messages: Sequence[Message]) -> bool:
        """``messages`` is the list measured last, as it stands: asking costs nothing."""
        return messages is self._source and len(messages) == len(self._messages)

    def _sync(self, messages: Sequence[Message]) -> None:
        if self.measured(messages):
            return  # asked again about the same list (several times a request)
        same = shared_prefix(messages, self._messages)
        del self._sums[same:], self._anchors[same:]
        sums, anchors = self._sums, self._anchors
        running = sums[-1] if sums else 0
        anchor = anchors[-1] if anchors else -1
        chars = self._chars
        # A slice, not an index per place: a view's ``__getitem__`` is Python code, and a
        # resumed record is measured whole.
        for position, message in enumerate(messages[same:], start=same):
            running += chars(message)
            if message["role"] == "assistant" and usage_total(message.get("usage")) > 0:
                anchor = position
            sums.append(running)
            anchors.append(anchor)
        self._messages = kept(messages)
        self._source = messages

    def total(self, messages: Sequence[Message]) -> int:
        """The sum of the sizes of ``messages``."""
        self._sync(messages)
        return self._sums[-1] if self._sums else 0

    def anchor(self, messages: Sequence[Message]) -> int | None:
        """``anchor_index(messages)``, without looking at more than what changed."""
        self._sync(messages)
        candidate = self._anchors[-1] if self._anchors else -1
        if candidate < 0:
            return None
        return _valid_anchor(messages, candidate)

    def prefix_sums(self, messages: Sequence[Message]) -> Sequence[int]:
        """Per position, the sum of the sizes of ``messages`` up to and including it."""
        self._sync(messages)
        return self._sums

    def chars_after(self, messages: Sequence[Message], position: int) -> int:
        """The sizes of the messages after ``position``, plus one separator each."""
        self._sync(messages)
        sums = self._sums
        return sums[-1] - sums[position] + (len(messages) - position - 1)


def prompt_chars(system: str, tools: Sequence[ToolSpec]) -> int:
    """The fixed part of every request: the system prompt and the tool definitions."""
    return json_chars(system) + json_chars(list(tools))


VIEW_FRAMING_CHARS = 40
"""A request's framing around its messages, in characters (an estimate)."""


def view_chars(fixed_chars: int, messages: Sequence[Message], chars: Chars = message_chars) -> int:
    """Characters of a request that sends ``messages`` after the fixed part, framing included."""
    return fixed_chars + sum(chars(m) for m in messages) + len(messages) + VIEW_FRAMING_CHARS


def request_chars(request: ModelRequest) -> int:
    if not any(images_of(m) for m in request.messages):
        body = {"system": request.system, "tools": request.tools, "messages": request.messages}
        return json_chars(body)
    body = {"system": request.system, "tools": request.tools, "messages": []}
    return json_chars(body) + sum(message_chars(m) + 1 for m in request.messages)


def usage_total(usage: Usage | None) -> int:
    """Every input token of the request the usage describes, cached or not (a count a
    resumed file does not give as a number counts 0: ``usage_count``)."""
    try:
        return int(usage["input"]) + int(usage["cacheRead"]) + int(usage["cacheWrite"])  # type: ignore[index]
    except (KeyError, TypeError, ValueError, OverflowError):
        return sum(usage_count(usage, key) for key in ("input", "cacheRead", "cacheWrite"))


def is_compaction_summary(message: Message) -> bool:
    return message["role"] == "user" and message["content"].startswith(COMPACTION_PREFIX)


@dataclass
class Calibration:
    """Characters per token, learned from the newest reply whose request size we know."""

    chars_per_token: float = DEFAULT_CHARS_PER_TOKEN
    samples: int = 0

    def learn(self, chars: int, tokens: int) -> None:
        if chars <= 0 or tokens <= 0:
            return
        ratio = min(MAX_CHARS_PER_TOKEN, max(MIN_CHARS_PER_TOKEN, chars / tokens))
        self.chars_per_token = ratio
        self.samples += 1

    def tokens(self, chars: int) -> int:
        return int(chars / self.chars_per_token + 0.999)


def anchor_index(messages: Sequence[Message]) -> int | None:
    """The newest reply whose reported usage still describes the current view.

    A usage figure describes the request that produced it, i.e. the messages before it
    as they stood then. A compaction summary standing in front of it that was written at
    or after it means those messages are no longer what is sent: the figure is stale.
    The summary, when there is one, is the view's first message (replay puts the newest
    compaction's summary there and nothing before it), so only that one is looked at.
    ``RunningSize.anchor`` gives the same answer without a scan.
    """
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message["role"] == "assistant" and usage_total(message.get("usage")) > 0:
            return _valid_anchor(messages, index)
    return None


def _valid_anchor(messages: Sequence[Message], index: int) -> int | None:
    """``index`` (the newest usage-bearing reply) unless a compaction summary in front
    of the view was written at or after it, which makes every figure stale."""
    first = messages[0]
    if is_compaction_summary(first) and first["timestamp"] >= messages[index]["timestamp"]:
        return None
    return index


def context_tokens(
    messages: Sequence[Message],
    fixed_chars: int,
    calibration: Calibration,
    chars: Chars = message_chars,
    running: RunningSize | None = None,
) -> int:
    """The size of a request that sends ``messages`` (a view) after the fixed prompt:
    the newest still-valid reported count plus an estimate for what came after it, or an
    estimate of the whole when no count is valid. With ``running`` (whose sizes are
    ``chars``), nothing already measured is measured again."""
    anchor = anchor_index(messages) if running is None else running.anchor(messages)
    if anchor is None:
        if running is None:
            return calibration.tokens(view_chars(fixed_chars, messages, chars))
        whole = fixed_chars + running.total(messages) + len(messages) + VIEW_FRAMING_CHARS
        return calibration.tokens(whole)
    reply = messages[anchor]
    assert reply["role"] == "assistant"
    if running is None:
        after = sum(chars(m) + 1 for m in messages[anchor + 1 :])
    else:
        after = running.chars_after(messages, anchor)
    # The reply itself is sent back with its framing: count whichever is larger.
    sent_back = max(usage_count(reply["usage"], "output"), calibration.tokens(chars(reply)))
    return usage_total(reply["usage"]) + sent_back + calibration.tokens(after)
