"""The Housekeeper: ties compaction and the request-view policies to a Harness and a log.

It is the glue of four parts, each with one job: ``window.Window`` (the window
arithmetic: threshold, kept size, where clearing starts), ``request_view.RequestView``
(what the next request sends and its token estimate, with the calibration and the
per-turn memos), ``usage_totals.UsageTotals`` (what the session has used), and
``compaction.compact_log`` (writing a compaction). What stays here is what needs the
Harness: following its replies, the hooks that decide when to compact, and the events.

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

import logging
from collections.abc import Callable, Sequence
from typing import Any

from crank.agent.events import CompactionEnd, CompactionReason, ContextUsage, Event, UsageUpdate
from crank.agent.harness import Harness
from crank.agent.images import Resolved
from crank.agent.loop import RunPrompt
from crank.agent.messages import Message
from crank.agent.model import Model, ModelRequest, accepts_images, take_notices
from crank.agent.view import Repairs

from .compaction import compact_log
from .errors import SessionBusy
from .estimate import Calibration, usage_total
from .log import SessionLog
from .notes import Notes, notes_path
from .policies import Policy
from .request_view import RequestView
from .usage_totals import UsageTotals
from .window import ContextSettings, Window

log = logging.getLogger(__name__)


def usage_update(usage: ContextUsage) -> UsageUpdate:
    return {"type": "usage_update", **usage}


class Housekeeper:
    """Keeps one session inside its model's window. It owns the session's request view
    (``RequestView``: what was cleared, the cache marks' policy, the calibration, the
    last repairs), its ``Window`` and its ``UsageTotals``; it reads the log and appends
    compaction entries to it. It does not own the transcript (the Harness does), the
    prompt (each run's ``RunPrompt``) or the model (it is handed one, and a new one with
    ``set_model``). See the module docstring."""

    def __init__(
        self,
        log: SessionLog,
        model: Model,
        settings: ContextSettings,
        *,
        summarizer: Model | None = None,
        notes: Notes | None = None,
        totals: UsageTotals | None = None,
    ) -> None:
        """``totals``: what the log's entries have used, when the caller summed them
        already (off the event loop); else they are summed here."""
        self._log = log
        self._model = model
        self._summarizer = summarizer
        self._window = Window(model, settings)
        self._view = RequestView(
            log,
            notes if notes is not None else Notes(notes_path(log.path)),
            Policy.named(settings.policy),
            self._window,
        )
        self._harness: Harness | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._totals = totals if totals is not None else log.usage_totals()
        self._told_images: tuple[bool, bool] = (False, False)
        """Whether the user was told of images left out (the model, missing blobs)."""

    # -- configuration ----------------------------------------------------------------

    def set_model(self, model: Model) -> None:
        """A new model has its own tokenizer: the learned ratio starts over."""
        if model is not self._model:
            self._model = model
            self._window.model = model
            self._view.new_model()
            self._told_images = (False, self._told_images[1])

    @property
    def settings(self) -> ContextSettings:
        return self._window.settings

    @property
    def calibration(self) -> Calibration:
        return self._view.calibration

    def threshold(self) -> int:
        """Compaction starts when the next request would pass this many tokens."""
        return self._window.threshold()

    def keep_tokens(self) -> int:
        return self._window.keep_tokens()

    @property
    def trimmed(self) -> bool:
        """True while the ``trim`` policy leaves turns of the record out of the request."""
        return self._view.trimmed

    @property
    def repairs(self) -> Repairs:
        """What the view last repaired in the record (nothing, for a healthy session)."""
        return self._view.repairs

    # -- building requests --------------------------------------------------------------

    @staticmethod
    def _prompt(harness: Harness) -> RunPrompt:
        """The prompt a request would carry now: the active run's, else the next run's."""
        run = harness.current_run
        return run.prompt if run is not None else RunPrompt.of(harness.system, harness.tools)

    async def build_request(self, record: Sequence[Message], prompt: RunPrompt) -> ModelRequest:
        request, resolved = self._view.build(record, prompt, accepts_images(self._model))
        await self._tell_images(resolved)
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

    def resume(self, record: Sequence[Message], prompt: RunPrompt) -> None:
        """Take ``record``, a resumed session's, under ``prompt``, in the thread that
        read it (``RequestView.resume``): its view is repaired and the meter starts
        from the newest reported count, or, when no count describes the view, the
        whole view is measured now. The first look at a long record's whole view
        (clearing and sizing it, a second for 50,000 messages) is never taken on the
        event loop: here, or in a worker thread before the first request
        (``_measured``). The memos keep it: asked again for the same messages,
        nothing is measured."""
        self._view.resume(record, prompt)

    async def _measured(self, harness: Harness) -> None:
        """The record's whole view measured, in a worker thread if the resume left it
        for later (before a request, a compaction, a recovery)."""
        await self._view.measure_resumed(harness.live_record, self._prompt(harness))

    def context_tokens(self, harness: Harness) -> int:
        """The size of the request the harness's record would send now, policies applied."""
        at_rest = not harness.is_running
        return self._view.tokens(harness.live_record, self._prompt(harness), at_rest=at_rest)

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
        self._totals.add(usage)
        self._view.learn(usage_total(usage))
        if self._harness is not None:
            await self._harness.announce(usage_update(self.usage(self._harness)))

    async def before_request(self, harness: Harness) -> None:
        self._attach(harness)
        await self._tell_notices()
        await self._measured(harness)
        if not self._view.policy.compact:
            return
        tokens = self.context_tokens(harness)
        if tokens <= self.threshold():
            return
        await self._compact(harness, "threshold", None, tokens, in_hook=True)

    async def recover_overflow(self, harness: Harness) -> bool:
        """After a refusal for length, make room (every policy but ``none``): ``trim``
        trims to half the kept size, the others compact. True if room was made."""
        self._attach(harness)
        await self._measured(harness)
        if self._view.policy == Policy.named("none"):
            return False
        if self._view.policy.trim:
            return self._view.trim_harder(harness.messages, self._prompt(harness))
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
        await harness.read_record()  # a resumed record not read yet: in a worker thread
        await self._measured(harness)
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
                    size=self._view.size,
                    tokens_before=tokens_before,
                    instructions=instructions,
                    calibration=self._view.calibration if summarizer is self._model else None,
                )
                if outcome.compacted:
                    self.recount()
                    replayed = self._log.replay()
                    if in_hook:
                        harness.adopt_messages(replayed)
                    else:
                        harness.replace_messages(replayed)
                    self._view.restart()
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
        self._totals = self._log.usage_totals()

    def usage(self, harness: Harness) -> ContextUsage:
        """The context meter and what the session has used so far (every reply in the
        file, on every branch: what was paid for)."""
        counts = self._totals.counts
        return {
            "contextTokens": self.context_tokens(harness),
            "contextWindow": self._model.context_window,
            "input": counts["input"],
            "output": counts["output"],
            "cacheRead": counts["cacheRead"],
            "cacheWrite": counts["cacheWrite"],
            "cost": self._totals.cost,
        }


__all__ = ["ContextSettings", "Housekeeper", "usage_update"]
