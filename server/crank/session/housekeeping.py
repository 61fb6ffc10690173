"""The Housekeeper: ties compaction and the request-view policies to a Harness and a log.

Wiring (the API is fixed; the server is built against it):

    keeper = Housekeeper(log, model, ContextSettings())
    harness = Harness(system=..., tools=..., model=model, messages=log.replay(),
                      build_request=keeper.build_request,
                      before_request=keeper.before_request,
                      recover_overflow=keeper.recover_overflow)
    harness.subscribe(log.listener())        # first: the log must hold every message

What it promises:

- ``repairs`` says what the view repaired in the record (results given for calls
  that have none, orphan and duplicate results and empty failed replies left out);
  a change is logged once, not at every request.
- ``build_request`` turns the record into the request under the run's prompt (the
  system prompt and tool specs the Harness captured when the run started; the keeper
  keeps no copy): the repaired view, old turns trimmed or old results cleared by
  policy, cache marks placed, then the keys of the session's notes (``notes.py``)
  after the marks. The same record, prompt, state and notes give the same bytes.
- ``before_request`` runs at every safe point of a run (before the first request of a
  prompt and after each whole tool batch): if the next request would pass the
  threshold it compacts, so a long run cannot walk into the wall between turns.
- ``recover_overflow``: a request refused as too long anyway is compacted for once
  (the loop retries that turn once, never in a loop).
- After compacting, the harness is handed what the log now replays, so record, log
  and harness agree. A failed or empty summary appends nothing, the run goes on, and
  ``compaction_end`` says why.
- Events: ``compaction_start {reason}``, ``compaction_end {compacted, error?}``, and
  ``usage_update`` after each reply and each compaction. ``usage_update`` follows the
  reply's ``message_end`` for listeners and consumer alike (the Housekeeper subscribes
  itself at its first hook call and announces through the harness).
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from crank.agent.events import (
    CompactionEnd,
    CompactionReason,
    ContextUsage,
    Event,
    UsageUpdate,
)
from crank.agent.harness import Harness
from crank.agent.images import ImageResolver, Resolved
from crank.agent.loop import RunPrompt
from crank.agent.messages import Message, now_ms
from crank.agent.model import Model, ModelRequest, ToolSpec, accepts_images, take_notices
from crank.agent.view import GrowingView, Repairs

from .compaction import compact_log
from .errors import SessionBusy
from .estimate import (
    VIEW_FRAMING_CHARS,
    Calibration,
    RunningSize,
    SizeCache,
    context_tokens,
    message_chars,
    prompt_chars,
    usage_total,
)
from .log import SessionLog
from .notes import Notes, listed_keys, notes_index, notes_path, with_notes_index
from .policies import (
    ClearState,
    Policy,
    PolicyMemo,
    PolicyName,
    TrimState,
    cache_marks,
    clear_old_results,
    trim_old_turns,
)

log = logging.getLogger(__name__)

DEFAULT_RESERVE = 16_384
SMALL_WINDOW_RESERVE_SHARE = 5
"""On a window too small for the default reserve, a fifth of it is kept free instead."""


@dataclass(frozen=True)
class ContextSettings:
    reserve_tokens: int | None = None
    """Kept free for the reply and what the estimate misses. Default: 16,384, or a
    fifth of a small window."""
    keep_recent_tokens: int = 20_000
    """About how much of the newest conversation a compaction keeps word for word (at
    most a third of the usable window, so a small window still gets room back)."""
    policy: PolicyName = "default"
    """``none`` | ``cache`` | ``clear`` | ``compact`` | ``trim`` | ``default``."""
    clear_at_tokens: int | None = None
    """Clear old results once a request passes this. Default: the kept size."""

    def reserve(self, window: int) -> int:
        if self.reserve_tokens is not None:
            return max(0, self.reserve_tokens)
        return min(DEFAULT_RESERVE, window // SMALL_WINDOW_RESERVE_SHARE)


@dataclass(frozen=True)
class _SentMemo:
    """What ``Housekeeper._sent`` computed last, and for which inputs: ``key`` (the
    record's length, its last message's id, the fixed size, the policy states and the
    calibration) and ``last``, the last message itself, so an id reused by a new object
    is never taken for the old one."""

    key: tuple[int, int, int, ClearState, TrimState, float]
    last: Message | None
    repairs: Repairs
    sent: list[Message]
    clear: ClearState
    trim: TrimState


def usage_update(usage: ContextUsage) -> UsageUpdate:
    return {"type": "usage_update", **usage}


class Housekeeper:
    """Keeps one session inside its model's window. It owns the request-view state of
    that session (what was cleared, the cache marks' policy), the token calibration
    learned from the provider's usage, the session's usage totals and the last view
    repairs; it reads the log and appends compaction entries to it. It does not own the
    transcript (the Harness does), the prompt (each run's ``RunPrompt``) or the model
    (it is handed one, and a new one with ``set_model``). See the module docstring."""

    def __init__(
        self,
        log: SessionLog,
        model: Model,
        settings: ContextSettings,
        *,
        summarizer: Model | None = None,
        notes: Notes | None = None,
    ) -> None:
        self._policy = Policy.named(settings.policy)
        self._notes = notes if notes is not None else Notes(notes_path(log.path))
        self._log = log
        self._model = model
        self._settings = settings
        self._summarizer = summarizer
        self._calibration = Calibration()
        self._sizes = SizeCache()
        self._view = GrowingView()
        self._running = RunningSize(self._sizes.chars)
        self._images = ImageResolver()
        self._policy_sizes = RunningSize(self._sizes.chars)
        """The sizes of the view the policies are handed (before clearing)."""
        self._memo = PolicyMemo()
        self._fixed: tuple[str, Sequence[ToolSpec], int] | None = None
        self._last_sent: _SentMemo | None = None
        self._last_chars: tuple[Sequence[Message], int, int] | None = None
        self._clear = ClearState()
        self._trim = TrimState()
        self._view_changed_ms = 0
        self._last_request_chars: int | None = None
        self._repairs = Repairs()
        self._harness: Harness | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._totals = self._totals_from_log()
        self._told_images: tuple[bool, bool] = (False, False)
        """Whether the user was told of images left out (the model, missing blobs)."""

    # -- configuration ----------------------------------------------------------------

    def set_model(self, model: Model) -> None:
        """A new model has its own tokenizer: the learned ratio starts over."""
        if model is not self._model:
            self._model = model
            self._calibration = Calibration()
            self._last_request_chars = None
            self._told_images = (False, self._told_images[1])

    @property
    def settings(self) -> ContextSettings:
        return self._settings

    @property
    def calibration(self) -> Calibration:
        return self._calibration

    # -- limits -----------------------------------------------------------------------

    def _window(self) -> int:
        return max(1, self._model.context_window)

    def threshold(self) -> int:
        """Compaction starts when the next request would pass this many tokens."""
        return self._window() - self._settings.reserve(self._window())

    def keep_tokens(self) -> int:
        return max(1, min(self._settings.keep_recent_tokens, self.threshold() // 3))

    def _clear_at(self) -> int:
        return self._settings.clear_at_tokens or self.keep_tokens()

    # -- building requests --------------------------------------------------------------

    @staticmethod
    def _prompt(harness: Harness) -> RunPrompt:
        """The prompt a request would carry now: the active run's, else the next run's."""
        run = harness.current_run
        return run.prompt if run is not None else RunPrompt.of(harness.system, harness.tools)

    def _size(self, message: Message) -> int:
        return self._calibration.tokens(self._sizes.chars(message))

    def _fixed_chars(self, system: str, tools: Sequence[ToolSpec]) -> int:
        """``prompt_chars`` of the run's prompt, measured once per prompt, not per request."""
        last = self._fixed
        if last is not None and last[0] is system and last[1] is tools:
            return last[2]
        chars = prompt_chars(system, tools)
        self._fixed = (system, tools, chars)
        return chars

    def _index(self) -> tuple[list[str], int]:
        """The keys of the session's notes, listed at the end of every request, and
        the characters that listing adds (counted with the fixed part)."""
        keys = listed_keys(self._notes)
        text = notes_index(keys)
        if text is None:
            return keys, 0
        return keys, message_chars({"role": "user", "content": text, "timestamp": 0}) + 1

    @property
    def trimmed(self) -> bool:
        """True while the ``trim`` policy leaves turns of the record out of the request."""
        return self._trim.boundary > 0

    @property
    def repairs(self) -> Repairs:
        """What the view last repaired in the record (nothing, for a healthy session)."""
        return self._repairs

    def _sent(
        self, record: Sequence[Message], fixed: int, *, sending: bool = False
    ) -> tuple[list[Message], ClearState, TrimState]:
        """What a request would send now. Only a request being sent, or an estimate at
        rest (``sending``), updates ``repairs``: an estimate taken while a reply's calls
        are still running would report their pending results as repaired, every turn.

        The answer for the same record, prompt, clearing state and calibration is the
        same, so it is remembered: ``before_request`` and the ``build_request`` that
        follows it compute one view, not two."""
        last = record[-1] if record else None
        key = (
            len(record),
            id(last),
            fixed,
            self._clear,
            self._trim,
            self._calibration.chars_per_token,
        )
        memo = self._last_sent
        if memo is not None and memo.key == key and memo.last is last:
            repairs, sent, state, trim = memo.repairs, memo.sent, memo.clear, memo.trim
        else:
            view, repairs = self._view.repair(record)
            trimmed, trim = self._trim_turns(view, fixed)
            sent, state = self._clear_results(trimmed, fixed)
            self._last_sent = _SentMemo(key, last, repairs, sent, state, trim)
        if sending and repairs != self._repairs:
            self._repairs = repairs
            if repairs:
                log.warning("%s: the request view repairs the record: %s", self._log.path, repairs)
        return sent, state, trim

    def _tokens_of(self, fixed: int) -> Callable[[Sequence[Message]], int]:
        calibration = self._calibration

        def tokens(messages: Sequence[Message]) -> int:
            return calibration.tokens(self._chars_of(fixed, messages))

        return tokens

    def _trim_turns(
        self, view: list[Message], fixed: int, *, keep: int | None = None
    ) -> tuple[list[Message], TrimState]:
        """The ``trim`` policy: past the threshold, the oldest turns after the task go,
        down to about the kept size (``keep``, when recovering from an overflow)."""
        if not self._policy.trim:
            return view, self._trim
        return trim_old_turns(
            view,
            self._trim,
            tokens=self._tokens_of(fixed),
            limit=self.threshold() if keep is None else 0,
            keep_tokens=self.keep_tokens() if keep is None else keep,
            size=self._size,
            tail_start=self._tail_start,
        )

    def _clear_results(self, view: list[Message], fixed: int) -> tuple[list[Message], ClearState]:
        if not self._policy.clear:
            return view, self._clear
        return clear_old_results(
            view,
            self._clear,
            tokens=self._tokens_of(fixed),
            limit=self._clear_at(),
            keep_tokens=self._clear_at() // 4,
            size=self._size,
            memo=self._memo,
            tail_start=self._tail_start,
        )

    def _tail_start(self, view: Sequence[Message], keep_tokens: int, floor: int) -> int:
        """Where the newest ``keep_tokens`` of ``view`` begin (never before ``floor``),
        found by bisecting the view's running sizes instead of walking back through it:
        the policies ask on every request of a long run."""
        sums = self._policy_sizes.prefix_sums(view)
        total = sums[-1] if sums else 0
        need = total - keep_tokens * self._calibration.chars_per_token
        position = bisect.bisect_left(sums, need) + 1 if need > 0 else 0
        return min(len(view), max(floor, position))

    def _chars_of(self, fixed: int, messages: Sequence[Message]) -> int:
        """``view_chars`` of one list, summed once however often it is asked for."""
        known = self._last_chars
        if known is not None and known[0] is messages and known[1] == fixed:
            return known[2]
        chars = fixed + self._running.total(messages) + len(messages) + VIEW_FRAMING_CHARS
        self._last_chars = (messages, fixed, chars)
        return chars

    async def build_request(self, record: Sequence[Message], prompt: RunPrompt) -> ModelRequest:
        system = prompt.system
        keys, index_chars = self._index()
        fixed = self._fixed_chars(system, prompt.tools) + index_chars
        sent, state, trim = self._sent(record, fixed, sending=True)
        if (state, trim) != (self._clear, self._trim):
            self._view_changed_ms = now_ms()
        self._clear, self._trim = state, trim  # equal or not: it carries the clearing memo
        marks = cache_marks(sent) if self._policy.cache else ()
        tools = list(prompt.tools)
        resolved = self._images.resolve(sent, self._log.load_image, accepts_images(self._model))
        await self._tell_images(resolved)
        request = ModelRequest(
            system=system, messages=resolved.messages, tools=tools, cache_marks=marks
        )
        request = with_notes_index(request, keys)  # last, after the marks: see notes.py
        # The request's size in the same characters every estimate counts, from the
        # sizes already known: encoding the request is the provider's job, done once.
        self._last_request_chars = self._chars_of(fixed, sent)
        self._sizes.prune(record, sent)
        return request

    async def _tell_images(self, resolved: Resolved) -> None:
        """Say once (per model, per session) that a request left images out."""
        told_model, told_missing = self._told_images
        messages = []
        if resolved.omitted and not told_model:
            told_model = True
            messages.append(
                f"{self._model.id} does not accept images: {resolved.omitted} image(s) "
                "were sent as text placeholders (choose a model that takes images, or "
                "set provider.images if this one does)"
            )
        if resolved.missing and not told_missing:
            told_missing = True
            messages.append(
                f"{resolved.missing} stored image(s) of this session are missing from "
                f"{self._log.blobs}; placeholders stand in for them"
            )
        self._told_images = (told_model, told_missing)
        if messages and self._harness is not None:
            count = resolved.omitted + resolved.missing
            await self._harness.announce(
                {"type": "images_omitted", "count": count, "message": "; ".join(messages)}
            )

    def context_tokens(self, harness: Harness) -> int:
        """The size of the request the harness's record would send now, policies applied."""
        record = harness.messages
        prompt = self._prompt(harness)
        fixed = self._fixed_chars(prompt.system, prompt.tools) + self._index()[1]
        # At rest the estimate is of the next request exactly: its repairs are news. In
        # a run, a reply's calls are still running and would count as repaired.
        sent, state, trim = self._sent(record, fixed, sending=not harness.is_running)
        anchor = self._running.anchor(sent)
        stale = anchor is not None and sent[anchor]["timestamp"] <= self._view_changed_ms
        if stale or (state, trim) != (self._clear, self._trim):
            # The newest count was for a request cleared differently: estimate the whole.
            return self._calibration.tokens(self._chars_of(fixed, sent))
        return context_tokens(
            sent, fixed, self._calibration, self._sizes.chars, running=self._running
        )

    # -- harness hooks ------------------------------------------------------------------

    def attach(self, harness: Harness) -> None:
        """Follow ``harness``'s replies (usage, calibration). Hooks attach on their own;
        attaching at once also covers a reply that comes before the first hook."""
        self._attach(harness)

    def detach(self) -> None:
        """Stop following the harness (the session it kept was closed or replaced)."""
        if self._unsubscribe is not None:
            self._unsubscribe()
        self._unsubscribe = None
        self._harness = None

    def _attach(self, harness: Harness) -> None:
        if self._harness is harness:
            return
        if self._unsubscribe is not None:
            self._unsubscribe()
        self._harness = harness
        self._unsubscribe = harness.subscribe(self._on_event)

    async def _tell_notices(self) -> None:
        """Pass on what the model has to say (a server that cannot call tools), once."""
        if self._harness is None:
            return
        for kind, message in take_notices(self._model):
            await self._harness.announce({"type": "notice", "kind": kind, "message": message})

    async def _on_event(self, event: Event) -> None:
        if event["type"] != "message_end":
            return
        message = event["message"]
        if message["role"] != "assistant":
            return
        await self._tell_notices()
        usage = message["usage"]
        for key in ("input", "output", "cacheRead", "cacheWrite"):
            self._totals[key] += int(usage[key])
        self._totals["cost"] += float(usage.get("cost", 0.0))
        if self._last_request_chars is not None and usage_total(usage) > 0:
            self._calibration.learn(self._last_request_chars, usage_total(usage))
        if self._harness is not None:
            await self._harness.announce(usage_update(self.usage(self._harness)))

    async def before_request(self, harness: Harness) -> None:
        self._attach(harness)
        await self._tell_notices()
        if not self._policy.compact:
            return
        tokens = self.context_tokens(harness)
        if tokens <= self.threshold():
            return
        await self._compact(harness, "threshold", None, tokens, in_hook=True)

    async def recover_overflow(self, harness: Harness) -> bool:
        """After a refusal for length, make room (every policy but ``none``): ``trim``
        trims to half the kept size, the others compact. True if room was made."""
        self._attach(harness)
        if self._policy == Policy.named("none"):
            return False
        if self._policy.trim:
            return self._trim_harder(harness)
        tokens = self.context_tokens(harness)
        outcome = await self._compact(harness, "overflow", None, tokens, in_hook=True)
        if outcome["compacted"]:
            # One line that says what happened (the refusal taught the window, often
            # the only place a local server says it) and that nothing is lost.
            window = self._model.context_window
            await harness.announce(
                {
                    "type": "notice",
                    "kind": "window_learned",
                    "message": f"the server's window is {window:,} tokens: compacted and retried",
                }
            )
        return bool(outcome["compacted"])

    def _trim_harder(self, harness: Harness) -> bool:
        """Move the trim boundary so only about half the kept size is sent."""
        prompt = self._prompt(harness)
        fixed = self._fixed_chars(prompt.system, prompt.tools) + self._index()[1]
        view, _ = self._view.repair(harness.messages)
        _, trim = self._trim_turns(view, fixed, keep=max(1, self.keep_tokens() // 2))
        if trim == self._trim:
            return False
        self._trim = trim
        self._view_changed_ms = now_ms()
        return True

    # -- compaction ---------------------------------------------------------------------

    async def compact(
        self,
        harness: Harness,
        *,
        reason: CompactionReason = "manual",
        instructions: str | None = None,
    ) -> dict[str, Any]:
        """Compact now (the user asked); refused while a run is active (``SessionBusy``)."""
        if harness.is_running:
            raise SessionBusy("compaction")
        self._attach(harness)
        tokens = self.context_tokens(harness)
        return await self._compact(harness, reason, instructions, tokens, in_hook=False)

    def _in_step(self, harness: Harness) -> bool:
        record = harness.messages
        replayed = self._log.replay()
        return len(record) == len(replayed) and (
            not record or record[-1]["timestamp"] == replayed[-1]["timestamp"]
        )

    async def _compact(
        self,
        harness: Harness,
        reason: CompactionReason,
        instructions: str | None,
        tokens_before: int,
        *,
        in_hook: bool,
    ) -> dict[str, Any]:
        await harness.announce({"type": "compaction_start", "reason": reason})
        result: dict[str, Any] = {"compacted": False}
        try:
            if not self._in_step(harness):
                result["reason"] = "the transcript is not the session log's; nothing was written"
            else:
                summarizer = self._summarizer or self._model
                outcome = await compact_log(
                    self._log,
                    summarizer,
                    keep_tokens=self.keep_tokens(),
                    size=self._size,
                    tokens_before=tokens_before,
                    instructions=instructions,
                    calibration=self._calibration if summarizer is self._model else None,
                )
                if outcome.compacted:
                    self.recount()
                    replayed = self._log.replay()
                    if in_hook:
                        harness.adopt_messages(replayed)
                    else:
                        harness.replace_messages(replayed)
                    self._clear, self._trim = ClearState(), TrimState()
                    self._view_changed_ms = now_ms()
                    result = {
                        "compacted": True,
                        "tokensBefore": tokens_before,
                        "tokensAfter": self.context_tokens(harness),
                    }
                else:
                    result["reason"] = outcome.reason
        except Exception as error:  # housekeeping must never cost the user their prompt
            log.exception("compaction failed")
            result = {"compacted": False, "reason": f"compaction failed: {error}"}
        end: CompactionEnd = {"type": "compaction_end", "compacted": result["compacted"]}
        if not result["compacted"]:
            end["error"] = result["reason"]
        await harness.announce(end)
        if result["compacted"]:
            await harness.announce(usage_update(self.usage(harness)))
        return result

    # -- usage --------------------------------------------------------------------------

    def recount(self) -> None:
        """Sum the session's usage again from the file (after an entry this keeper did
        not hear as an event was written: a compaction, a branch summary)."""
        self._totals = self._totals_from_log()

    def _totals_from_log(self) -> dict[str, Any]:
        totals: dict[str, Any] = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
        cost = 0.0
        for entry in self._log.entries():
            message = entry.get("message")
            if entry["type"] == "message" and message and message["role"] == "assistant":
                usage = message["usage"]
            elif entry["type"] in ("compaction", "branchSummary") and "usage" in entry:
                usage = entry["usage"]  # a summary call is paid for too
            else:
                continue
            for key in totals:
                totals[key] += int(usage.get(key, 0))
            cost += float(usage.get("cost", 0.0))
        totals["cost"] = cost
        return totals

    def usage(self, harness: Harness) -> ContextUsage:
        """The context meter and what the session has used so far (every reply in the
        file, on every branch: what was paid for)."""
        totals = self._totals
        return {
            "contextTokens": self.context_tokens(harness),
            "contextWindow": self._model.context_window,
            "input": totals["input"],
            "output": totals["output"],
            "cacheRead": totals["cacheRead"],
            "cacheWrite": totals["cacheWrite"],
            "cost": totals["cost"],
        }
