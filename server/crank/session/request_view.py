"""What one session's next request sends, and how big it is: the record repaired, old
turns trimmed or old results cleared by policy, cache marks, images resolved, the
notes' keys last; and the token estimate of that same view.

``RequestView`` owns the request-view state of a session (what was cleared, the trim
boundary, the view memo, the last repairs), the token calibration learned from the
provider's usage, and the per-turn memos that keep a long run's bookkeeping flat
(running sizes, images, the clearing memo). It neither talks to the Harness nor
compacts: the Housekeeper does both and calls in here. The same record, prompt, state
and notes give the same bytes.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import anyio.to_thread

from crank.agent.images import ImageResolver, Resolved
from crank.agent.lineage import LazyRecord, Lineage, SharedView, has_lineage
from crank.agent.loop import RunPrompt
from crank.agent.messages import Message, now_ms
from crank.agent.model import ModelRequest, ToolSpec
from crank.agent.view import GrowingView, Repairs

from .estimate import (
    VIEW_FRAMING_CHARS,
    Calibration,
    RunningSize,
    SizeCache,
    anchor_index,
    context_tokens,
    message_chars,
    prompt_chars,
)
from .log import SessionLog
from .notes import Notes, listed_keys, notes_index, with_notes_index
from .policies import (
    ClearState,
    Policy,
    PolicyMemo,
    TrimMemo,
    TrimState,
    cache_marks,
    clear_old_results,
    trim_old_turns,
)
from .window import Window

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _SentMemo:
    """What ``RequestView._sent`` computed last, and for which inputs: ``key`` (the
    record's length, its last message's id, the fixed size, the policy states and the
    calibration) and ``last``, the last message itself, so an id reused by a new object
    is never taken for the old one."""

    key: tuple[int, int, int, ClearState, TrimState, float]
    last: Message | None
    repairs: Repairs
    sent: Sequence[Message]
    clear: ClearState
    trim: TrimState


class RequestView:
    def __init__(self, log: SessionLog, notes: Notes, policy: Policy, window: Window) -> None:
        self.policy = policy
        self._log = log
        self._notes = notes
        self._window = window
        self.calibration = Calibration()
        self._sizes = SizeCache()
        self._view = GrowingView()
        self._running = RunningSize(self._sizes.chars)
        self._images = ImageResolver()
        self._policy_sizes = RunningSize(self._sizes.chars)
        """The sizes of the view the policies are handed (before clearing)."""
        self._memo = PolicyMemo()
        self._trim_memo = TrimMemo()
        self._fixed: tuple[str, Sequence[ToolSpec], int] | None = None
        self._last_sent: _SentMemo | None = None
        self._last_chars: tuple[Sequence[Message], int, int] | None = None
        self._clear = ClearState()
        self._trim = TrimState()
        self._changed_ms = 0
        """When the clearing or trimming last changed what is sent."""
        self.last_request_chars: int | None = None
        """The size of the last request built, in the characters every estimate counts."""
        self._repairs = Repairs()
        self._resumed: Lineage | None = None
        """The lineage of a resumed record whose whole view is not measured yet: until
        it is, the meter reads the newest reported count (``resume``)."""
        self._measuring = False
        """That view is being measured in a worker thread: nothing here may touch the
        memos it fills, and the meter shows ``_counted``."""
        self._counted = 0
        """The meter's last figure for the resumed record read off its newest count."""
        self._as_is = False
        """That record was a ``LazyRecord`` that is its own view: nothing of it is
        repaired (which would decode it) until it is measured."""

    # -- state ----------------------------------------------------------------------------

    @property
    def trimmed(self) -> bool:
        """True while the ``trim`` policy leaves turns of the record out of the request."""
        return self._trim.boundary > 0

    @property
    def repairs(self) -> Repairs:
        """What the view last repaired in the record (nothing, for a healthy session)."""
        return self._repairs

    def new_model(self) -> None:
        """A new model has its own tokenizer: the learned ratio starts over."""
        self.calibration = Calibration()
        self.last_request_chars = None

    def learn(self, reported_tokens: int) -> None:
        """A reply's reported input: the ratio of the last request's size to it."""
        if self.last_request_chars is not None and reported_tokens > 0:
            self.calibration.learn(self.last_request_chars, reported_tokens)

    def restart(self) -> None:
        """After a compaction: nothing is cleared or trimmed in what the log replays."""
        self._clear, self._trim = ClearState(), TrimState()
        self._resumed = None
        self._changed_ms = now_ms()

    def size(self, message: Message) -> int:
        return self.calibration.tokens(self._sizes.chars(message))

    # -- the fixed part -------------------------------------------------------------------

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

    def _fixed_of(self, prompt: RunPrompt) -> int:
        return self._fixed_chars(prompt.system, prompt.tools) + self._index()[1]

    # -- the view -------------------------------------------------------------------------

    def _sent(
        self, record: Sequence[Message], fixed: int, *, sending: bool = False
    ) -> tuple[Sequence[Message], ClearState, TrimState]:
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
            self.calibration.chars_per_token,
        )
        memo = self._last_sent
        if memo is not None and memo.key == key and memo.last is last:
            repairs, sent, state, trim = memo.repairs, memo.sent, memo.clear, memo.trim
        else:
            view, repairs = self._view.shared(record)  # no copy of the transcript
            trimmed, trim = self._trim_turns(view, fixed)
            sent, state = self._clear_results(trimmed, fixed)
            self._last_sent = _SentMemo(key, last, repairs, sent, state, trim)
        if sending:
            self._sent_repairs(repairs)
        return sent, state, trim

    def _tokens_of(self, fixed: int) -> Callable[[Sequence[Message]], int]:
        calibration = self.calibration

        def tokens(messages: Sequence[Message]) -> int:
            return calibration.tokens(self._chars_of(fixed, messages))

        return tokens

    def _trim_turns(
        self, view: Sequence[Message], fixed: int, *, keep: int | None = None
    ) -> tuple[Sequence[Message], TrimState]:
        """The ``trim`` policy: past the threshold, the oldest turns after the task go,
        down to about the kept size (``keep``, when recovering from an overflow)."""
        if not self.policy.trim:
            return view, self._trim
        return trim_old_turns(
            view,
            self._trim,
            tokens=self._tokens_of(fixed),
            limit=self._window.threshold() if keep is None else 0,
            keep_tokens=self._window.keep_tokens() if keep is None else keep,
            size=self.size,
            tail_start=self._tail_start,
            memo=self._trim_memo,
        )

    def _clear_results(
        self, view: Sequence[Message], fixed: int
    ) -> tuple[Sequence[Message], ClearState]:
        if not self.policy.clear:
            return view, self._clear
        clear_at = self._window.clear_at()
        return clear_old_results(
            view,
            self._clear,
            tokens=self._tokens_of(fixed),
            limit=clear_at,
            keep_tokens=clear_at // 4,
            size=self.size,
            memo=self._memo,
            tail_start=self._tail_start,
        )

    def _tail_start(self, view: Sequence[Message], keep_tokens: int, floor: int) -> int:
        """Where the newest ``keep_tokens`` of ``view`` begin (never before ``floor``),
        found by bisecting the view's running sizes instead of walking back through it:
        the policies ask on every request of a long run. A view the policies left as
        it is was just measured as sent: its sums are taken from there, not summed
        twice."""
        sizes = self._running if self._running.measured(view) else self._policy_sizes
        sums = sizes.prefix_sums(view)
        total = sums[-1] if sums else 0
        need = total - keep_tokens * self.calibration.chars_per_token
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

    # -- what the Housekeeper asks ------------------------------------------------------

    def build(
        self, record: Sequence[Message], prompt: RunPrompt, accepts_images: bool
    ) -> tuple[ModelRequest, Resolved]:
        """The request for ``record`` under the run's ``prompt``, and what resolving its
        images left out (for the Housekeeper to tell)."""
        system = prompt.system
        keys, index_chars = self._index()
        fixed = self._fixed_chars(system, prompt.tools) + index_chars
        sent, state, trim = self._sent(record, fixed, sending=True)
        if (state, trim) != (self._clear, self._trim):
            self._changed_ms = now_ms()
        self._clear, self._trim = state, trim  # equal or not: it carries the clearing memo
        marks = cache_marks(sent) if self.policy.cache else ()
        tools = list(prompt.tools)
        # The request's own list: the one copy of the view a turn makes (the meter and
        # the estimates read the view where it lies).
        listed = sent.copied() if isinstance(sent, SharedView) else sent
        resolved = self._images.resolve(listed, self._log.load_image, accepts_images)
        request = ModelRequest(
            system=system, messages=resolved.messages, tools=tools, cache_marks=marks
        )
        self._resumed = None  # the whole view was measured for it, here
        request = with_notes_index(request, keys)  # last, after the marks: see notes.py
        # The request's size in the same characters every estimate counts, from the
        # sizes already known: encoding the request is the provider's job, done once.
        self.last_request_chars = self._chars_of(fixed, sent)
        self._sizes.prune(record, sent)
        return request, resolved

    def tokens(self, record: Sequence[Message], prompt: RunPrompt, *, at_rest: bool) -> int:
        """The size of the request ``record`` would send now, policies applied. At rest
        the estimate is of the next request exactly: its repairs are news. In a run, a
        reply's calls are still running and would count as repaired. A resumed record
        not measured yet is sized from its newest count (``resume``)."""
        if self._measuring:
            return self._counted
        if self._resumed is not None and self._is_resumed(record):
            counted = self._count_of(record, prompt)
            if counted is not None:
                self._counted = counted
                return counted
            self._resumed = None  # no count describes it any more: measure it
        return self._whole_tokens(record, prompt, at_rest=at_rest)

    def _whole_tokens(self, record: Sequence[Message], prompt: RunPrompt, *, at_rest: bool) -> int:
        """``tokens`` from the whole view, policies applied (memoised)."""
        fixed = self._fixed_of(prompt)
        sent, state, trim = self._sent(record, fixed, sending=at_rest)
        anchor = self._running.anchor(sent)
        stale = anchor is not None and sent[anchor]["timestamp"] <= self._changed_ms
        if stale or (state, trim) != (self._clear, self._trim):
            # The newest count was for a request cleared differently: estimate the whole.
            return self.calibration.tokens(self._chars_of(fixed, sent))
        return context_tokens(
            sent, fixed, self.calibration, self._sizes.chars, running=self._running
        )

    def resume(self, record: Sequence[Message], prompt: RunPrompt) -> None:
        """Take ``record`` (a resumed one, in the thread that read it) as the session's.

        Its view is repaired now (what a crash left is news at the open). When the
        newest reply's reported count still describes that view, the meter starts from
        it, as it stood when the session was last used, and clearing and sizing the
        whole view waits for the first request (``measure_resumed``, in a worker
        thread): for 50,000 messages that was most of the open. Otherwise (no reply
        reported usage, a compaction written after it, the ``trim`` policy, whose
        boundary decides whether ``recall`` is offered) it is measured now."""
        lazy = record if isinstance(record, LazyRecord) else None
        if (
            self.policy.trim
            or not has_lineage(record)
            or (lazy is not None and not lazy.sent_as_is())
        ):
            self.measure(record, prompt)
            return
        # A LazyRecord is its own view (nothing to repair), and only what the count
        # reads of it is decoded: its newest reply and what follows.
        self._as_is = lazy is not None
        self._sent_repairs(Repairs() if lazy is not None else self._view.shared(record)[1])
        counted = self._count_of(record, prompt)
        if counted is None:
            self.measure(record, prompt)
            return
        self._resumed, self._counted = record.lineage, counted

    def _is_resumed(self, record: Sequence[Message]) -> bool:
        return has_lineage(record) and record.lineage is self._resumed

    def _count_of(self, record: Sequence[Message], prompt: RunPrompt) -> int | None:
        """The newest still-valid reported count of ``record``'s view plus an estimate
        of what follows it (``context_tokens``, which looks at that tail only); None
        when no count describes the view. A ``LazyRecord`` is resumed only when it is
        its own view (``resume``: ``_as_is``), and so is the list a run reads it into;
        any other was repaired at the resume, so only what was added since is."""
        view = record if self._as_is else self._view.shared(record)[0]
        if anchor_index(view) is None:
            return None
        return context_tokens(view, self._fixed_of(prompt), self.calibration, self._sizes.chars)

    async def measure_resumed(self, record: Sequence[Message], prompt: RunPrompt) -> None:
        """Measure a resumed record's whole view (``measure``) in a worker thread, if
        ``resume`` left it for later: before its first request, or anything else that
        needs it. The meter shows the count meanwhile; the thread is never abandoned,
        so nothing here is touched by two threads at once."""
        if self._resumed is None or not self._is_resumed(record):
            return
        self._measuring = True
        try:
            await anyio.to_thread.run_sync(self.measure, record, prompt)
        finally:
            self._measuring = False

    def _sent_repairs(self, repairs: Repairs) -> None:
        """What a view about to be sent repaired, kept and, when it changed, logged."""
        if repairs != self._repairs:
            self._repairs = repairs
            if repairs:
                log.warning("%s: the request view repairs the record: %s", self._log.path, repairs)

    def measure(self, record: Sequence[Message], prompt: RunPrompt) -> None:
        """``tokens`` at rest for ``record`` (a resumed one), and the clearing and
        trimming that request would send taken as the session's, as ``build`` takes
        them, its images looked for: the first request after a resume starts from where
        this estimate ended, instead of clearing from the start again (which measured the
        whole record twice more, on the event loop) and looking through all of it for
        images."""
        fixed = self._fixed_of(prompt)
        _, state, trim = self._sent(record, fixed, sending=True)
        if (state, trim) != (self._clear, self._trim):
            self._changed_ms = now_ms()
        self._clear, self._trim = state, trim
        self._whole_tokens(record, prompt, at_rest=True)
        sent, _, _ = self._sent(record, fixed)  # remembered: what that estimate measured
        self._images.scan(sent)
        self._resumed = None

    def trim_harder(self, record: Sequence[Message], prompt: RunPrompt) -> bool:
        """Move the trim boundary so only about half the kept size is sent (after a
        refusal for length under the ``trim`` policy). True if it moved."""
        self._resumed = None
        view, _ = self._view.shared(record)
        keep = max(1, self._window.keep_tokens() // 2)
        _, trim = self._trim_turns(view, self._fixed_of(prompt), keep=keep)
        if trim == self._trim:
            return False
        self._trim = trim
        self._changed_ms = now_ms()
        return True


__all__ = ["RequestView"]
