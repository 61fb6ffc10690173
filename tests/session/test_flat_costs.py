"""A long run's per-turn bookkeeping does not grow with the run (issue 33).

Time is no measure on a shared machine, so this counts work instead: the lines of
Crank's own code executed per turn (``sys.settrace``), on the path a workspace wires
(Harness, SessionLog, Housekeeper with its default policy). A Python-level scan of the
transcript adds lines in proportion to its length; what runs at C speed over it (an
identity comparison of two lists, a list copy) adds none, and is not what made runs
quadratic. The per-turn count at the end of a run three times longer must be the same,
with usage on every reply and without any (many local servers report none, and the
estimate then took a path that rescanned the whole view twice a turn).

What runs at C speed is counted apart: the messages the memos compare to learn what a
view shares with the previous one (``ComparedCounter``). The lineage of the request
path's lists (agent/lineage.py) vouches for all but the newest turn's few; without it,
each turn compared the whole transcript about a dozen times.

The figures in time are bench/long_run.py's.
"""

from __future__ import annotations

import statistics
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from crank.agent import images, lineage
from crank.agent.harness import Harness
from crank.agent.messages import Message, assistant_message
from crank.agent.model import AbortSignal, ModelRequest, StreamEvent
from crank.agent.tools import OnUpdate, Tool, ToolCall
from crank.session import ContextSettings, Housekeeper, SessionLog, estimate, policies
from tests.support.line_counter import LineCounter


async def _small(call: ToolCall, signal: AbortSignal, on_update: OnUpdate) -> str:
    return "a small result " * 4


async def _large(call: ToolCall, signal: AbortSignal, on_update: OnUpdate) -> str:
    return "a result worth clearing later " * 40  # past policies.MIN_CLEAR_CHARS


SCHEMA = {"type": "object", "properties": {}}
TOOLS = [
    Tool(name="small", description="A small result.", parameters=SCHEMA, execute=_small),
    Tool(name="large", description="A large result.", parameters=SCHEMA, execute=_large),
]


class CountingModel:
    """One tool call per reply (a large result every fifth turn) until the last reply;
    notes the line count at each request, so the gaps are the lines of one turn."""

    api = "test"
    id = "counting"
    context_window = 10**9

    def __init__(
        self,
        turns: int,
        counter: LineCounter | ComparedCounter | CopiedCounter,
        *,
        usage: bool,
    ) -> None:
        self.left = turns
        self.counter = counter
        self.usage = usage
        self.marks: list[int] = []

    async def stream(
        self, request: ModelRequest, signal: AbortSignal
    ) -> AsyncIterator[StreamEvent]:
        self.marks.append(self.counter.lines)
        self.left -= 1
        name = "large" if self.left % 5 == 0 else "small"
        calls: list[Any] = (
            [] if self.left == 0 else [{"type": "toolCall", "id": f"c{self.left}", "name": name}]
        )
        for call in calls:
            call["arguments"] = {}
        message = assistant_message(calls, stop_reason="toolUse" if calls else "stop")
        if self.usage:
            message["usage"] = {  # type: ignore[typeddict-item]
                "input": 100 + 30 * len(request.messages),
                "output": 10,
                "cacheRead": 0,
                "cacheWrite": 0,
            }
        yield {"type": "done", "message": message}


class ComparedCounter:
    """Counts the messages the per-turn memos compare to learn what is new (what a
    ``shared_prefix`` could not take on its lists' lineage): each such comparison is
    a pass over the transcript at C speed, which the line count cannot see."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.lines = 0  # read by CountingModel at each request, as a line count is
        self._patch = monkeypatch

    def _counted(self, messages: Sequence[Message], before: Sequence[Message]) -> int:
        self.lines += min(len(messages), len(before)) - lineage.known_shared(messages, before)
        return lineage.shared_prefix(messages, before)

    def __enter__(self) -> ComparedCounter:
        for module in (images, estimate, policies):
            self._patch.setattr(module, "shared_prefix", self._counted)
        return self

    def __exit__(self, *exc: object) -> None:
        self._patch.undo()


class CopiedCounter:
    """Counts the copies of the whole view a turn makes (and passes over it: iterating a
    ``SharedView``): each one touches every message's reference count, twice with the
    freeing, which is what made the last tenth of a long run dearer per turn than the
    first once the Python work was flat. Only copies of at least half the record count:
    what the policies copy of their kept tail is bounded by tokens, not by the run.
    What ``list()`` or a slice copies of a plain list is not seen; the request path's
    lists are ``LineageList``s and ``SharedView``s, whose copies (and whole walks) are."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.lines = 0  # read by CountingModel at each request, as a line count is
        self._patch = monkeypatch
        self.record: Sequence[Message] = ()

    def _note(self, count: int) -> None:
        if count and count * 2 >= len(self.record):
            self.lines += 1

    def __enter__(self) -> CopiedCounter:
        note = self._note
        init, joined, copied, iterate = (
            lineage.LineageList.__init__,
            lineage.LineageList.joined.__func__,  # type: ignore[attr-defined]
            lineage.SharedView.copied,
            lineage.SharedView.__iter__,
        )

        def counted_init(self: Any, messages: Any, *args: Any, **kwargs: Any) -> None:
            init(self, messages, *args, **kwargs)
            note(len(self))

        def counted_joined(cls: Any, head: Any, tail: Any, *args: Any) -> Any:
            made = joined(cls, head, tail, *args)
            note(len(made))
            return made

        def counted_copied(self: Any) -> Any:
            note(len(self))
            return copied(self)

        def counted_iter(self: Any) -> Iterator[Message]:
            passed = 0  # a walk that stops early (``task_end``) is not a pass
            try:
                for message in iterate(self):
                    passed += 1
                    yield message
            finally:
                note(passed)

        self._patch.setattr(lineage.LineageList, "__init__", counted_init)
        self._patch.setattr(lineage.LineageList, "joined", classmethod(counted_joined))
        self._patch.setattr(lineage.SharedView, "copied", counted_copied)
        self._patch.setattr(lineage.SharedView, "__iter__", counted_iter)
        return self

    def __exit__(self, *exc: object) -> None:
        self._patch.undo()


CLEARING = ContextSettings(keep_recent_tokens=2_000)
"""A small kept size, so clearing has long been under way when the count is read."""
TRIMMING = ContextSettings(keep_recent_tokens=2_000, policy="trim")
"""With a small window (``TRIM_WINDOW``), turns have long been trimmed by then."""
TRIM_WINDOW = 5_000


async def lines_per_turn_at_the_end(
    turns: int,
    folder: Path,
    *,
    usage: bool,
    counter: LineCounter | ComparedCounter | CopiedCounter | None = None,
    settings: ContextSettings = CLEARING,
    window: int | None = None,
) -> float:
    counter = counter or LineCounter()
    log = SessionLog.create(folder, str(folder))
    model = CountingModel(turns, counter, usage=usage)
    if window is not None:
        model.context_window = window
    keeper = Housekeeper(log, model, settings)
    harness = Harness(
        system="You are a test.",
        tools=TOOLS,
        model=model,
        build_request=keeper.build_request,
        before_request=keeper.before_request,
        recover_overflow=keeper.recover_overflow,
    )
    harness.subscribe(log.listener())
    keeper.attach(harness)
    if isinstance(counter, CopiedCounter):
        counter.record = harness.live_record
    with counter:
        await harness.prompt("go").wait()
    log.close()
    gaps = [b - a for a, b in zip(model.marks, model.marks[1:], strict=False)]
    assert len(gaps) == turns - 1
    assert keeper.trimmed is (settings.policy == "trim")
    return statistics.median(gaps[-max(1, len(gaps) // 10) :])


@pytest.mark.slow
@pytest.mark.parametrize("usage", [True, False], ids=["with usage", "without usage"])
async def test_the_work_of_a_turn_does_not_grow_with_the_run(tmp_path: Path, usage: bool) -> None:
    short = await lines_per_turn_at_the_end(100, tmp_path / "short", usage=usage)
    long = await lines_per_turn_at_the_end(300, tmp_path / "long", usage=usage)
    # Before the running totals, the 300-turn run's last turns ran about 2.5x the lines
    # of the 100-turn run's; a constant per-turn cost gives the same count.
    assert long <= short * 1.02, f"{short:.0f} lines a turn at 100 turns, {long:.0f} at 300"


@pytest.mark.slow
@pytest.mark.parametrize("usage", [True, False], ids=["with usage", "without usage"])
async def test_the_work_of_a_trimmed_turn_does_not_grow_with_the_run(
    tmp_path: Path, usage: bool
) -> None:
    """Under the ``trim`` policy a turn looks at the kept messages, never at the ones
    left out (``TrimMemo`` keeps their note and call ids): before, every request looked
    through all of them twice (a cut that parts no call from its result, the note's
    count of turns), and the 300-turn run's last turns ran 2.1x the lines of the
    100-turn run's. The kept tail is measured at another point of its sawtooth (it
    grows until the boundary jumps), so the two counts differ by up to a tenth (2,081
    and 2,296 lines with usage; 2,188 at 600 turns, 2,261 at 900)."""
    short = await lines_per_turn_at_the_end(
        100, tmp_path / "short", usage=usage, settings=TRIMMING, window=TRIM_WINDOW
    )
    long = await lines_per_turn_at_the_end(
        300, tmp_path / "long", usage=usage, settings=TRIMMING, window=TRIM_WINDOW
    )
    assert long <= short * 1.2, f"{short:.0f} lines a turn at 100 turns, {long:.0f} at 300"


@pytest.mark.parametrize("policy", ["default", "trim"])
@pytest.mark.parametrize("usage", [True, False], ids=["with usage", "without usage"])
async def test_what_a_turn_compares_does_not_grow_with_the_run(
    tmp_path: Path, usage: bool, policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The memos learn what a view shares with the last one from its lineage
    (agent/lineage.py), clearing or trimming under way included, and compare only the
    newest turn's messages. Before lineages, each turn compared the whole transcript
    about a dozen times over (4,000 turns: 1.9x the CPU per turn at the end as at the
    start)."""
    settings, window = (TRIMMING, TRIM_WINDOW) if policy == "trim" else (CLEARING, None)
    counts = []
    for turns in (100, 300):
        counter = ComparedCounter(monkeypatch)
        counts.append(
            await lines_per_turn_at_the_end(
                turns,
                tmp_path / str(turns),
                usage=usage,
                counter=counter,
                settings=settings,
                window=window,
            )
        )
    short, long = counts
    assert long == short, f"{short} messages compared a turn at 100 turns, {long} at 300"


@pytest.mark.parametrize("policy", ["default", "trim"])
@pytest.mark.parametrize("usage", [True, False], ids=["with usage", "without usage"])
async def test_a_turn_copies_the_view_once(
    tmp_path: Path, usage: bool, policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one copy of the view a turn makes is the request's own list; the estimates
    (before the request, and the context meter after each reply) read the view where it
    lies (``SharedView``), clearing or trimming under way included. Before, the meter
    and the request each repaired into a copy of the whole view: two a turn. Trimmed,
    what is sent is under half the record, and even its one copy does not count."""
    settings, window = (TRIMMING, TRIM_WINDOW) if policy == "trim" else (CLEARING, None)
    expected = 0 if policy == "trim" else 1
    copies = await lines_per_turn_at_the_end(
        300,
        tmp_path,
        usage=usage,
        counter=CopiedCounter(monkeypatch),
        settings=settings,
        window=window,
    )
    assert copies == expected, f"{copies} copies of the whole view a turn"
