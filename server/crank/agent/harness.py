"""The Harness: one transcript, one writer (principle 6).

The Harness owns the record and drives the loop. Outsiders get read-only snapshots and
events. Listeners hear every event after the record changed and before the consumer
(principle 4); they may add keys to an event (the session saver adds ``entryId``). A
listener that raises ends the run loudly: a saver that cannot save must not be silent.

Every run ends with exactly one ``agent_settled``, after ``agent_end`` and after whatever
the run caused (compaction and overflow retries happen inside it, in hooks). Events are balanced on every
exit: if the loop is cut short (a listener failed, or a hook such as ``build_request``
raised), the pairs it opened are closed and the failure is recorded as an error reply.

System prompt, tools and model are captured when a run starts; changing them while a
run is active takes effect at the next run, never mid-run (principle 9).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar, get_args

from .events import Event, QueueState
from .lineage import LazyRecord, Lineage, LineageList
from .loop import BuildRequest, LoopConfig, PlainRequests, RunPrompt, agent_loop
from .messages import ImageBlock, Message, UserMessage, assistant_message, user_message
from .model import AbortSignal, Model
from .tasks import Tasks
from .tools import Tool

log = logging.getLogger(__name__)
_T = TypeVar("_T")
_Q = TypeVar("_Q")

Listener = Callable[[Event], Awaitable[None] | None]

_CLOSES = {
    "agent_start": "agent_end",
    "turn_start": "turn_end",
    "message_start": "message_end",
    "tool_execution_start": "tool_execution_end",
}
_OPENS = {end: start for start, end in _CLOSES.items()}


_LOOK_BACK = 256
"""How far back ``messages_after`` looks: a group larger than this is saved in parts."""


SHUTDOWN_REASON = "Interrupted: the server shut down (the editor reloaded, restarted or closed it)."
"""What a run cut off by ``Harness.close`` records, so no client reads it as Stop."""


class HarnessBusy(RuntimeError):
    """Refused because a run is active (refused as run_in_progress or refused_while_running)."""


class ListenerFailed(RuntimeError):
    """A listener raised; the run was ended and the original error is the cause."""


QueueKind = Literal["steering", "followUp"]
"""The two queues, spelled as on the wire: steering enters at the next safe point,
a follow-up only when the run would otherwise end (principle 6)."""
QUEUE_KINDS: tuple[QueueKind, ...] = get_args(QueueKind)


@dataclass(frozen=True)
class Queued:
    """One queued message: the text the model gets, what the user typed when that text
    is a command's expansion, and the images that go with it. It becomes the same user
    message a prompt would (``message``); the queues show it as typed (``shown``)."""

    text: str
    typed: str | None = None
    images: tuple[ImageBlock, ...] = ()

    @property
    def shown(self) -> str:
        """What the queues show and ``clearQueue`` hands back: the text as typed."""
        return self.typed if self.typed is not None else self.text

    def message(self) -> UserMessage:
        return user_message(self.text, typed=self.typed, images=self.images)


def _queue_of(which: QueueKind, steering: list[_Q], follow_up: list[_Q]) -> list[_Q]:
    """The queue ``which`` names; an unknown name is a ValueError, never a fallback."""
    if which == "steering":
        return steering
    if which == "followUp":
        return follow_up
    raise ValueError(f"unknown queue {which!r}; the queues are {', '.join(QUEUE_KINDS)}")


@dataclass
class Queues:
    """A snapshot of the queues as shown: each message's text as typed."""

    steering: list[str]
    follow_up: list[str]

    def as_dict(self) -> QueueState:
        return {"steering": list(self.steering), "followUp": list(self.follow_up)}

    def of(self, which: QueueKind) -> list[str]:
        return _queue_of(which, self.steering, self.follow_up)


@dataclass
class _Pending:
    """The queues themselves: whole messages, in order."""

    steering: list[Queued]
    follow_up: list[Queued]

    def of(self, which: QueueKind) -> list[Queued]:
        return _queue_of(which, self.steering, self.follow_up)

    def shown(self) -> Queues:
        return Queues([q.shown for q in self.steering], [q.shown for q in self.follow_up])


def new_run_id(number: int) -> str:
    """A run's one id, minted when the run is accepted and used everywhere (events,
    the protocol's ``runId``, permission questions): ``run-N-<8 hex>``, the counter for
    reading and the random part so no two sessions or processes share one."""
    return f"run-{number}-{uuid.uuid4().hex[:8]}"


class Run:
    """One accepted run: its id, the prompt it was started with, its events (if you
    iterate at once) and its end."""

    def __init__(self, run_id: str, prompt: RunPrompt) -> None:
        self.id = run_id
        self.prompt = prompt
        """The system prompt and tool specs every request of this run sends."""
        self.settled = asyncio.Event()
        self.stop_reason: str | None = None
        self.error: BaseException | None = None
        self.failed_listener: Listener | None = None
        self._queue: asyncio.Queue[Event | None] | None = None
        self._sent_unheard = 0
        """Events that went out before anyone asked for ``events()``."""
        self.task: asyncio.Task[None] | None = None

    def events(self) -> AsyncIterator[Event]:
        """Every event of the run, ``agent_settled`` last, for one consumer. Call it
        before the first await after the run was started: once an event has gone out
        unheard, or a second time, it raises RuntimeError rather than give a stream
        with a hole (``Harness.subscribe`` hears a run that is already under way)."""
        if self._queue is not None:
            raise RuntimeError(f"{self.id}: events() was already called; it has one consumer")
        if self._sent_unheard:
            raise RuntimeError(
                f"{self.id}: events() was called after {self._sent_unheard} event(s) went out; "
                "call it before the first await after the run started"
            )
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self._queue = queue

        async def iterate() -> AsyncIterator[Event]:
            while True:
                event = await queue.get()
                if event is None:
                    return
                yield event

        return iterate()

    def _deliver(self, event: Event | None) -> None:
        if self._queue is not None:
            self._queue.put_nowait(event)
        elif event is not None:
            self._sent_unheard += 1

    async def wait(self) -> str:
        """Wait for ``agent_settled``; returns the stop reason, raises if a listener failed."""
        await self.settled.wait()
        if self.error is not None:
            raise ListenerFailed(str(self.error)) from self.error
        return self.stop_reason or "stop"


class Harness:
    """See the module docstring. Usable with no disk, project or editor."""

    def __init__(
        self,
        *,
        system: str,
        tools: Sequence[Tool],
        model: Model,
        messages: Sequence[Message] = (),
        max_turns: int | None = None,
        build_request: BuildRequest | None = None,
        before_request: Callable[[Harness], Awaitable[None]] | None = None,
        recover_overflow: Callable[[Harness], Awaitable[bool]] | None = None,
    ) -> None:
        self.system = system
        self.tools: list[Tool] = list(tools)
        self.model = model
        self.max_turns = max_turns
        self.build_request = build_request
        self._plain_requests = PlainRequests()  # when build_request is None
        self.before_request = before_request
        self.recover_overflow = recover_overflow
        self._in_hook = False
        self._record = LineageList(messages, Lineage())
        """Only appended to; replacing it in place mints a new lineage (see lineage.py)."""
        self._unread: LazyRecord | None = None
        """A resumed record still in its file (``replace_messages``): the transcript
        until the next run reads it (``read_record``) into ``_record``."""
        self._snapshot = LineageList((), self._record.lineage, 0)
        self._listeners: list[Listener] = []
        self._roles: dict[Listener, str] = {}
        """What each listener does, in the words of a failed run's reply."""
        self._queues = _Pending([], [])
        self._run: Run | None = None
        self._signal = AbortSignal()
        self._run_counter = 0
        self._pending_events: list[Event] = []
        self._background = Tasks()

    # -- reading ---------------------------------------------------------------------

    @property
    def messages(self) -> LineageList | LazyRecord:
        """A snapshot of the transcript; the Harness is its only writer. Never changed
        once handed out (treat it as read-only); asked again before the record changed,
        the same snapshot is handed out again, not another copy. A resumed record not
        read yet is handed out as it is: reading a page of it decodes that page."""
        if self._unread is not None:
            return self._unread
        snapshot, record = self._snapshot, self._record
        if len(snapshot) != len(record) or snapshot.lineage is not record.lineage:
            snapshot = self._snapshot = record.frozen()
        return snapshot

    @property
    def live_record(self) -> Sequence[Message]:
        """The record itself, for one look now without a copy (the Housekeeper sizes it
        several times a turn). It grows while a run goes on: keep ``messages``, never this."""
        return self._record if self._unread is None else self._unread

    @property
    def unread(self) -> bool:
        """The transcript is a resumed record not read yet (``read_record``)."""
        return self._unread is not None

    async def read_record(self) -> None:
        """Read a resumed record not read yet into the record itself, in a worker
        thread, under its lineage (the same messages, so what measured it still holds).
        A run does it before its first step; so does anything else that needs the
        whole transcript at once (a compaction). Raises what reading the file raises,
        the transcript left as it was."""
        unread = self._unread
        if unread is None:
            return
        messages = await asyncio.to_thread(unread.read_all)
        if self._unread is unread:  # not replaced meanwhile
            self._record = LineageList(messages, unread.lineage)
            self._unread = None

    @property
    def is_running(self) -> bool:
        return self._run is not None

    @property
    def current_run(self) -> Run | None:
        return self._run

    @property
    def queues(self) -> Queues:
        return self._queues.shown()

    # -- listeners ---------------------------------------------------------------------

    def subscribe(self, listener: Listener, *, role: str = "a listener") -> Callable[[], None]:
        """Hear every event, before the consumer. Returns an unsubscribe (safe to call twice).

        ``role`` says what the listener does, for the reply a user reads should it
        raise: ``Run stopped: saving the session failed: <why>``."""
        self._listeners.append(listener)
        self._roles[listener] = role

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)
                self._roles.pop(listener, None)

        return unsubscribe

    async def _tell(
        self, event: Event, skip: Listener | None = None
    ) -> tuple[Exception, Listener] | None:
        """Every listener but ``skip`` hears the event, even if an earlier one raised (so
        pairs stay balanced for them). Returns the first failure and who raised it."""
        failure: tuple[Exception, Listener] | None = None
        for listener in list(self._listeners):
            if listener is skip:
                continue
            try:
                outcome = listener(event)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception as exc:
                log.error("a listener failed on %s: %s", event.get("type"), exc)
                if failure is None:
                    failure = (exc, listener)
        return failure

    # -- changing the transcript and config ----------------------------------------------

    def messages_after(self, message: Message) -> list[Message]:
        """The messages the record holds after ``message`` (the same object), looked for
        from the end, at most ``_LOOK_BACK`` back so this stays cheap. The loop adds
        messages that complete together before announcing the first, and a saver may
        write them with it (``SessionLog.listener``). Empty when ``message`` is the last
        one or not in the record."""
        record = self._record
        for position in range(len(record) - 1, max(-1, len(record) - 1 - _LOOK_BACK), -1):
            if record[position] is message:
                return record[position + 1 :]
        return []

    def replace_messages(self, messages: Sequence[Message]) -> None:
        """Swap the whole transcript (resume, branch, compaction). Refused during a run.
        A growing ``LineageList`` becomes the record itself, lineage and all: its maker
        hands it over and keeps no hold on it (a resumed record measured in a worker
        thread under that lineage, whose memos then still hold at the next request); a
        ``LazyRecord`` is kept as it is until something reads it whole
        (``read_record``); anything else is copied into a record of a new lineage."""
        if self._run is not None:
            raise HarnessBusy("cannot replace the transcript while a run is active")
        self._unread = None
        if isinstance(messages, LazyRecord):
            self._unread = messages
            self._record = LineageList((), Lineage())
        elif isinstance(messages, LineageList) and not messages.is_frozen:
            self._record = messages
        else:
            self._record = LineageList(messages, Lineage())

    def adopt_messages(self, messages: Sequence[Message]) -> None:
        """Swap the transcript from inside a run's hook (``before_request``,
        ``recover_overflow``), where the record is at a safe point: compaction hands the
        harness what the log now replays. Refused anywhere else during a run."""
        if self._run is not None and not self._in_hook:
            raise HarnessBusy("the transcript can only be swapped at a safe point of a run")
        self._record[:] = list(messages)
        self._record.lineage = Lineage()  # no longer the history it was

    async def announce(self, event: Event) -> None:
        """Send an event of one's own (``compaction_start``, ``usage_update``...) in order
        with the run's events. From a hook it goes out at once; from a listener it goes
        out right after the event being heard (never in the middle of it); when idle,
        listeners hear it directly."""
        run = self._run
        if run is None:
            await self._tell(event)
        elif self._in_hook:
            await self._emit(run, event)
        else:
            self._pending_events.append(event)

    async def _in_hook_call(self, hook: Callable[[Harness], Awaitable[_T]]) -> _T:
        self._in_hook = True
        try:
            return await hook(self)
        finally:
            self._in_hook = False

    def set_system(self, system: str) -> None:
        """Takes effect at the next run (a running run keeps the prompt it started with)."""
        self.system = system

    def set_tools(self, tools: Sequence[Tool]) -> None:
        self.tools = list(tools)

    def set_model(self, model: Model) -> None:
        self.model = model

    # -- queues -----------------------------------------------------------------------

    def steer(
        self, text: str, images: Sequence[ImageBlock] = (), *, typed: str | None = None
    ) -> Queues:
        """Queue a message (its images, and what was typed as for ``prompt``) for the
        next safe point of the active run (or of the next run)."""
        self._queues.steering.append(Queued(text, typed, tuple(images)))
        self._queue_changed()
        return self.queues

    def follow_up(
        self, text: str, images: Sequence[ImageBlock] = (), *, typed: str | None = None
    ) -> Queues:
        """Queue a message for when the active run would otherwise end."""
        self._queues.follow_up.append(Queued(text, typed, tuple(images)))
        self._queue_changed()
        return self.queues

    def clear_queue(self) -> Queues:
        """Empty both queues and return what was removed, as typed (for the client's
        input box)."""
        removed = self.queues
        self._queues = _Pending([], [])
        if removed.steering or removed.follow_up:
            self._queue_changed()
        return removed

    def remove_queued(self, which: QueueKind, index: int, text: str | None = None) -> str | None:
        """Take one message out of a queue ("steering" or "followUp") and return it, or
        None if it is no longer there. With ``text``, the entry at ``index`` is removed
        only if it still holds that text (else the first entry that does), so a client
        acting on a slightly old view never removes the wrong message. The text is the
        message as shown (as typed)."""
        queue = self._queues.of(which)
        texts = [queued.shown for queued in queue]
        if text is not None and not (0 <= index < len(texts) and texts[index] == text):
            index = texts.index(text) if text in texts else -1
        if not 0 <= index < len(texts):
            return None
        removed = queue.pop(index).shown
        self._queue_changed()
        return removed

    def _queue_changed(self) -> None:
        event: Event = {"type": "queue_update", **self.queues.as_dict()}
        if self._run is not None:
            # Inside a run the event joins the run's stream in order.
            self._pending_events.append(event)
            return
        self._background.start(self._tell_quietly(event))

    async def _tell_quietly(self, event: Event) -> None:
        await self._tell(event)

    def _take(self, which: QueueKind) -> list[UserMessage]:
        queue = self._queues.of(which)
        if not queue:
            return []
        taken = list(queue)
        queue.clear()
        self._pending_events.append({"type": "queue_update", **self.queues.as_dict()})
        return [queued.message() for queued in taken]

    # -- runs -------------------------------------------------------------------------

    def prompt(
        self, text: str, images: Sequence[ImageBlock] = (), *, typed: str | None = None
    ) -> Run:
        """Start a run with a new user message (and its images, after the text;
        ``typed``: what the user typed, when ``text`` is its expansion). Raises
        HarnessBusy at once if one is active."""
        return self._start([user_message(text, typed=typed, images=images)])

    def continue_(self) -> Run:
        """Start a run from the transcript as it stands (no new message), e.g. a retry."""
        return self._start([])

    def _start(self, new_messages: list[Message]) -> Run:
        if self._run is not None:
            raise HarnessBusy("a run is already active; steer, queue a follow-up, or abort it")
        self._run_counter += 1
        run = Run(new_run_id(self._run_counter), RunPrompt.of(self.system, self.tools))
        config = self._config(run)
        self._run = run
        self._signal = AbortSignal()
        run.task = asyncio.get_running_loop().create_task(self._drive(run, new_messages, config))
        return run

    async def abort(self, reason: str = "aborted") -> str:
        """Stop the active run and return once it has settled: "aborted", or "idle".
        ``reason`` is recorded on the cut-off reply (``errorMessage``)."""
        run = self._run
        if run is None:
            return "idle"
        self._signal.abort(reason)
        await run.settled.wait()
        return "aborted"

    async def close(self) -> None:
        """Abort the active run (it settles, recorded as usual) and end the Harness's
        own background work (queue announcements outside a run). The cut-off reply
        says the server shut down, not that the user stopped it."""
        await self.abort(SHUTDOWN_REASON)
        await self._background.close()

    def _config(self, run: Run) -> LoopConfig:
        """The run's fixed configuration, captured now: model, prompt, tools, hooks."""

        async def before_request() -> None:
            await self._flush_pending_events(run)
            if self.before_request is not None:
                await self._in_hook_call(self.before_request)

        async def recover_overflow() -> bool:
            if self.recover_overflow is None:
                return False
            return await self._in_hook_call(self.recover_overflow)

        config = LoopConfig(
            model=self.model,
            system=run.prompt.system,
            tools=list(self.tools),
            max_turns=self.max_turns,
            build_request=self.build_request or self._plain_requests,
            take_steering=lambda: self._take("steering"),
            take_follow_up=lambda: self._take("followUp"),
            before_request=before_request,
            recover_overflow=recover_overflow,
            captured=run.prompt,  # one capture: what the run's requests send is run.prompt
        )
        return config

    async def _drive(self, run: Run, new_messages: list[Message], config: LoopConfig) -> None:
        open_pairs: list[tuple[str, str]] = []
        crash: Exception | None = None
        try:
            await self.read_record()
        except Exception as exc:  # the run ends at once, recorded, and says why
            log.exception("the resumed transcript could not be read")
            crash = exc
        if crash is None:
            crash = await self._step_through(run, open_pairs, new_messages, config)
        if run.error is not None:
            failed = run.failed_listener
            role = "a listener" if failed is None else self._roles.get(failed, "a listener")
            await self._close_after_failure(run, open_pairs, f"{role} failed: {run.error}")
        elif crash is not None:
            await self._close_after_failure(run, open_pairs, f"{type(crash).__name__}: {crash}")
        self._run = None
        settled: Event = {"type": "agent_settled"}
        failure = await self._tell(settled, skip=run.failed_listener)
        if failure is not None and run.error is None:
            run.error = failure[0]
        run._deliver(settled)
        run._deliver(None)
        run.settled.set()

    async def _step_through(
        self,
        run: Run,
        open_pairs: list[tuple[str, str]],
        new_messages: list[Message],
        config: LoopConfig,
    ) -> Exception | None:
        """The loop's events, told and delivered; what a hook raised, if it did."""
        loop = agent_loop(self._record, new_messages, config, self._signal)
        try:
            async for event in loop:
                self._track(open_pairs, event)
                if not await self._emit(run, event):
                    break
                if event["type"] == "agent_end":
                    run.stop_reason = event["stopReason"]
                if not await self._flush_pending_events(run):
                    break
        except Exception as exc:  # a hook raised: the run must still end, recorded and settled
            log.exception("the run stopped on an error")
            return exc
        finally:
            await loop.aclose()
        return None

    async def _emit(self, run: Run, event: Event) -> bool:
        """Tell the listeners, then the consumer. False once a listener has failed."""
        failure = await self._tell(event, skip=run.failed_listener)
        run._deliver(event)
        if failure is not None:
            run.error, run.failed_listener = failure
            return False
        return True

    async def _flush_pending_events(self, run: Run) -> bool:
        while self._pending_events:
            if not await self._emit(run, self._pending_events.pop(0)):
                return False
        return True

    @staticmethod
    def _track(open_pairs: list[tuple[str, str]], event: Event) -> None:
        """The pairs open so far, innermost last: (opening event type, its tool call id
        for a tool, so a failure closes the tool with the id it was announced with)."""
        kind = event["type"]
        if event["type"] == "tool_execution_start":
            open_pairs.append((kind, event["toolCallId"]))
        elif kind in _CLOSES:
            open_pairs.append((kind, ""))
        elif kind in _OPENS and open_pairs and open_pairs[-1][0] == _OPENS[kind]:
            open_pairs.pop()

    async def _close_after_failure(
        self, run: Run, open_pairs: list[tuple[str, str]], why: str
    ) -> None:
        """Record the failure and close every pair the loop opened, for the listeners
        that still work and the consumer. The notice gets a message pair of its own when
        none was open, so they hear why the run stopped (a log that still works keeps
        it; a listener that failed hears nothing more)."""
        notice = assistant_message(
            [], stop_reason="error", model=self.model.id, error_message=f"Run stopped: {why}"
        )
        closing: list[Event] = []
        if all(kind != "message_start" for kind, _ in open_pairs):
            open_pairs = [*open_pairs, ("message_start", "")]
            closing.append({"type": "message_start", "message": notice})
        for kind, call_id in reversed(open_pairs):
            end = _CLOSES[kind]
            if end == "message_end":
                closing.append({"type": "message_end", "message": notice})
            elif end == "tool_execution_end":
                closing.append(
                    {
                        "type": "tool_execution_end",
                        "toolCallId": call_id,
                        "result": {"content": "interrupted", "isError": True},
                    }
                )
            elif end == "turn_end":
                closing.append({"type": "turn_end", "message": notice})
            else:
                closing.append({"type": "agent_end", "stopReason": "error"})
        if self._unread is None:  # a record never read keeps its file's messages only
            self._record.append(notice)
        run.stop_reason = "error"
        for event in closing:
            await self._tell(event, skip=run.failed_listener)
            run._deliver(event)
