"""The Harness: one transcript, one writer; queues; abort; listeners (DESIGN.md 3, 4, 6)."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest

from crank.agent.harness import Harness, HarnessBusy, ListenerFailed
from crank.agent.images import image_block
from crank.agent.lineage import FrozenError, LazyRecord, Lineage
from crank.agent.messages import assistant_message, user_message
from crank.agent.model import AbortSignal, ModelRequest, StreamEvent
from crank.agent.scripted import Reply, ScriptedModel, call, reply_from_dict, say
from crank.agent.view import build_view, is_valid_view
from tests.support.images import png

from .helpers import assert_balanced, echo_tool, gated_tool, slow_tool


async def test_prompt_while_running_is_refused_on_the_callers_line() -> None:
    model = ScriptedModel([say("slow", delay=0.01)])
    harness = Harness(system="s", tools=[], model=model)
    run = harness.prompt("one")
    with pytest.raises(HarnessBusy):
        harness.prompt("two")
    await run.wait()
    assert [m["content"] for m in harness.messages if m["role"] == "user"] == ["one"]


async def test_replace_messages_is_refused_while_running_and_allowed_after() -> None:
    model = ScriptedModel([say("slow", delay=0.01)])
    harness = Harness(system="s", tools=[], model=model)
    run = harness.prompt("one")
    with pytest.raises(HarnessBusy):
        harness.replace_messages([])
    await run.wait()
    harness.replace_messages([user_message("fresh")])
    assert [m["role"] for m in harness.messages] == ["user"]


async def test_the_snapshot_cannot_change_the_record() -> None:
    harness = Harness(system="s", tools=[], model=ScriptedModel([say("hi")]))
    await harness.prompt("go").wait()
    snapshot = harness.messages
    with pytest.raises(FrozenError):
        snapshot.append(user_message("smuggled"))  # type: ignore[attr-defined]
    with pytest.raises(FrozenError):
        snapshot[0] = user_message("rewritten")  # type: ignore[index]
    copy = list(snapshot)
    copy.append(user_message("mine"))
    assert len(harness.messages) == 2
    assert harness.messages is snapshot  # nothing changed: the same snapshot, no copy


async def test_a_replaced_record_starts_a_new_lineage() -> None:
    """Memos trust a shared lineage instead of comparing (agent/lineage.py): a record
    swapped in place (compaction's adopt) or replaced must not keep the old one."""
    harness = Harness(system="s", tools=[], model=ScriptedModel([say("hi"), say("again")]))
    await harness.prompt("go").wait()
    before = harness.messages
    await harness.prompt("more").wait()
    grown = harness.messages
    assert grown.lineage is before.lineage and grown.stable == 4
    harness.replace_messages(list(grown[:2]))
    assert harness.messages.lineage is not before.lineage


async def test_steering_enters_only_after_the_whole_tool_batch_is_answered() -> None:
    gate, entered = asyncio.Event(), asyncio.Event()
    model = ScriptedModel(
        [Reply(calls=(("gated", {"text": "a"}), ("echo", {"text": "b"}))), say("ok")]
    )
    harness = Harness(system="s", tools=[gated_tool(gate, entered), echo_tool()], model=model)
    run = harness.prompt("go")
    events = run.events()
    await entered.wait()
    harness.steer("change of plan")
    gate.set()
    seen = [e async for e in events]
    await run.wait()
    roles = [
        (m["role"], m.get("content") if m["role"] == "user" else None) for m in harness.messages
    ]
    assert roles == [
        ("user", "go"),
        ("assistant", None),
        ("toolResult", None),
        ("toolResult", None),
        ("user", "change of plan"),
        ("assistant", None),
    ]
    assert model.requests[1].messages[-1]["content"] == "change of plan"
    assert any(e["type"] == "queue_update" and e["steering"] == [] for e in seen)
    assert_balanced(seen)


async def test_follow_up_waits_until_the_run_would_otherwise_end() -> None:
    gate, entered = asyncio.Event(), asyncio.Event()
    model = ScriptedModel([call("gated", {"text": "a"}), say("first answer"), say("second answer")])
    harness = Harness(system="s", tools=[gated_tool(gate, entered)], model=model)
    run = harness.prompt("go")
    await entered.wait()
    harness.follow_up("and then this")
    gate.set()
    await run.wait()
    texts = [m["role"] if m["role"] != "user" else m["content"] for m in harness.messages]
    assert texts == ["go", "assistant", "toolResult", "assistant", "and then this", "assistant"]
    assert len(model.requests) == 3


async def test_abort_during_a_silent_stream_is_prompt_and_keeps_the_partial_reply() -> None:
    model = ScriptedModel([Reply(text="Hello there, I was saying", hang_after=2)], chunk_size=5)
    harness = Harness(system="s", tools=[], model=model)
    run = harness.prompt("go")
    events = run.events()
    collected: list[dict[str, Any]] = []
    async for event in events:
        collected.append(event)
        if sum(1 for e in collected if e["type"] == "message_update") == 2:
            break
    # The stream is silent for ever (hang_after), so abort returning at all proves it
    # cancelled the stream instead of waiting; latency is measured by bench/abort.py.
    assert await harness.abort() == "aborted"
    collected += [e async for e in events]
    last = harness.messages[-1]
    assert last["role"] == "assistant" and last["stopReason"] == "aborted"
    assert last["content"] == [{"type": "text", "text": "Hello ther"}]
    assert_balanced(collected)
    assert [e["stopReason"] for e in collected if e["type"] == "agent_end"] == ["aborted"]
    assert not harness.is_running


async def test_abort_during_a_slow_tool_gives_an_aborted_result() -> None:
    started = asyncio.Event()
    cancelled: list[bool] = []
    model = ScriptedModel([call("slow", {"text": "x"}), say("never")])
    tool = slow_tool(started=started, cancelled=cancelled)
    harness = Harness(system="s", tools=[tool], model=model)
    run = harness.prompt("go")
    events = run.events()
    await started.wait()
    assert await harness.abort() == "aborted"
    assert cancelled == [True]  # cut short mid-sleep, not waited for (bench/abort.py times it)
    collected = [e async for e in events]
    result = harness.messages[-1]
    assert result["role"] == "toolResult" and result["isError"] and "Aborted" in result["content"]
    assert is_valid_view(build_view(harness.messages))
    assert_balanced(collected)
    assert len(model.requests) == 1


async def test_queues_survive_abort_until_cleared() -> None:
    model = ScriptedModel([Reply(text="...", hang_after=0)])
    harness = Harness(system="s", tools=[], model=model)
    run = harness.prompt("go")
    harness.steer("steer me")
    harness.follow_up("later")
    await asyncio.sleep(0.01)
    await harness.abort()
    await run.wait()
    assert harness.queues.steering == ["steer me"] and harness.queues.follow_up == ["later"]
    removed = harness.clear_queue()
    assert (removed.steering, removed.follow_up) == (["steer me"], ["later"])
    assert harness.queues.steering == [] and harness.queues.follow_up == []


async def test_abort_when_idle_says_idle() -> None:
    harness = Harness(system="s", tools=[], model=ScriptedModel([]))
    assert await harness.abort() == "idle"


async def test_a_listener_that_raises_ends_the_run_loudly_and_balanced() -> None:
    model = ScriptedModel([call("echo", {"text": "a"}), say("never reached")])
    harness = Harness(system="s", tools=[echo_tool()], model=model)
    heard: list[dict[str, Any]] = []

    def broken(event: dict[str, Any]) -> None:
        if event["type"] == "tool_execution_start":
            raise OSError("disk full")

    harness.subscribe(broken, role="saving the session")
    harness.subscribe(heard.append)
    run = harness.prompt("go")
    consumed = [e async for e in run.events()]
    with pytest.raises(ListenerFailed, match="disk full"):
        await run.wait()
    assert_balanced(consumed)
    assert [e["type"] for e in heard].count("agent_settled") == 1
    assert harness.messages[-1]["role"] == "assistant"
    # what failed, in the words it subscribed with, and why
    stopped = harness.messages[-1].get("errorMessage", "")  # type: ignore[union-attr]
    assert stopped == "Run stopped: saving the session failed: disk full"
    # the listeners that still work hear why, in a message of its own (the client does)
    told = [e["message"] for e in heard if e["type"] == "message_end"][-1]
    assert "disk full" in told.get("errorMessage", "")
    assert len(model.requests) == 1
    assert not harness.is_running


async def test_unsubscribing_twice_is_harmless() -> None:
    harness = Harness(system="s", tools=[], model=ScriptedModel([say("hi")]))
    heard: list[dict[str, Any]] = []
    unsubscribe = harness.subscribe(heard.append)
    unsubscribe()
    unsubscribe()
    await harness.prompt("go").wait()
    assert heard == []


async def test_queue_updates_reach_listeners_when_idle() -> None:
    harness = Harness(system="s", tools=[], model=ScriptedModel([]))
    heard: list[dict[str, Any]] = []
    harness.subscribe(heard.append)
    harness.steer("a")
    harness.follow_up("b")
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert heard[-1] == {"type": "queue_update", "steering": ["a"], "followUp": ["b"]}


async def test_a_crash_between_call_and_result_is_repaired_on_resume() -> None:
    first = ScriptedModel([call("echo", {"text": "a"})])
    harness = Harness(system="s", tools=[echo_tool()], model=first)
    run = harness.prompt("go")
    async for event in run.events():
        if event["type"] == "tool_execution_start":
            break
    await harness.abort()
    record = [
        m for m in harness.messages if m["role"] != "toolResult"
    ]  # as if the result never hit disk
    model = ScriptedModel([say("resumed")])
    resumed = Harness(system="s", tools=[echo_tool()], model=model, messages=record)
    await resumed.prompt("continue").wait()
    sent = model.requests[0].messages
    assert is_valid_view(sent)
    assert sent[2]["role"] == "toolResult" and "Interrupted" in sent[2]["content"]


async def test_remove_queued_takes_out_exactly_the_message_named() -> None:
    harness = Harness(system="s", tools=[], model=ScriptedModel([]))
    for text in ("a", "b", "c"):
        harness.steer(text)
    harness.follow_up("later")
    assert harness.remove_queued("steering", 2, "b") == "b"  # the index moved: the text decides
    assert harness.queues.steering == ["a", "c"]
    assert harness.remove_queued("followUp", 0) == "later"
    assert harness.remove_queued("steering", 5) is None
    assert harness.remove_queued("steering", 0, "zzz") is None
    assert harness.queues.steering == ["a", "c"] and harness.queues.follow_up == []


async def test_a_queued_message_keeps_what_was_typed_and_its_images() -> None:
    model = ScriptedModel([say("one"), say("two")])
    harness = Harness(system="s", tools=[], model=model)
    picture = image_block(png(3, 2), "dot.png")
    harness.follow_up("the expansion", [picture], typed="/fix 3")
    harness.follow_up("plain")
    assert harness.queues.follow_up == ["/fix 3", "plain"]  # shown as typed
    assert harness.remove_queued("followUp", 1, "plain") == "plain"
    run = harness.prompt("go")
    await run.wait()
    queued = [m for m in harness.messages if m["role"] == "user"][1]
    assert queued["content"] == "the expansion" and queued.get("typed") == "/fix 3"
    assert queued.get("images") == [picture]


async def test_a_run_id_is_minted_once_and_no_two_harnesses_share_one() -> None:
    first = Harness(system="s", tools=[], model=ScriptedModel([say("a")]))
    second = Harness(system="s", tools=[], model=ScriptedModel([say("b")]))
    runs = [first.prompt("go"), second.prompt("go")]
    for run in runs:
        assert re.fullmatch(r"run-1-[0-9a-f]{8}", run.id)
        await run.wait()
    assert runs[0].id != runs[1].id


async def test_an_unknown_queue_name_is_an_error_not_the_follow_up_queue() -> None:
    harness = Harness(system="s", tools=[], model=ScriptedModel([]))
    harness.follow_up("later")
    with pytest.raises(ValueError, match="unknown queue 'follow_up'"):
        harness.remove_queued("follow_up", 0)  # type: ignore[arg-type]
    assert harness.queues.follow_up == ["later"]
    assert harness.remove_queued("followUp", 0) == "later"


def test_a_scripted_reply_with_an_unknown_error_kind_is_refused_by_name() -> None:
    assert reply_from_dict({"error": "x", "errorKind": "overflow"}).error_kind == "overflow"
    with pytest.raises(ValueError, match="errorKind 'too_long' is not one of"):
        reply_from_dict({"error": "x", "errorKind": "too_long"})


async def test_events_asked_for_after_the_run_began_is_an_error_not_a_stream_with_a_hole() -> None:
    harness = Harness(system="s", tools=[], model=ScriptedModel([say("a")]))
    run = harness.prompt("go")
    await run.wait()
    with pytest.raises(RuntimeError, match=r"after \d+ event"):
        run.events()
    fresh = harness.prompt("again")
    events = fresh.events()
    with pytest.raises(RuntimeError, match="already called"):
        fresh.events()
    assert [e["type"] async for e in events][-1] == "agent_settled"


async def test_requests_without_policies_equal_a_full_rebuild_every_turn() -> None:
    """Principle 5 for the plain harness (``crank run``): the requests it builds turn by
    turn from its growing view are exactly ``build_view`` of the whole record then,
    through parallel calls, a call id used again (the view starts over) and a second
    prompt after an error reply that left its calls unanswered."""
    checked: list[int] = []

    class Checking:
        api, id, context_window = "test", "checking", 10**9

        def __init__(self, plan: list[list[str]], harness_ref: list[Harness]) -> None:
            self.plan, self.ref = plan, harness_ref

        async def stream(
            self, request: ModelRequest, signal: AbortSignal
        ) -> AsyncIterator[StreamEvent]:
            assert request.messages == build_view(self.ref[0].messages)
            checked.append(len(request.messages))
            ids = self.plan.pop(0) if self.plan else []
            calls: list[Any] = [
                {"type": "toolCall", "id": i, "name": "echo", "arguments": {"text": i}} for i in ids
            ]
            failed = ids == ["unanswered"]
            yield {
                "type": "done",
                "message": assistant_message(
                    calls,
                    stop_reason="error" if failed else "toolUse" if calls else "stop",
                    error_message="fell over" if failed else None,
                ),
            }

    plan = [["a"], ["b", "c"], ["d"], ["a"], ["e", "f"], ["unanswered"], ["g"], ["h"], []]
    ref: list[Harness] = []
    harness = Harness(system="s", tools=[echo_tool()], model=Checking(plan, ref))
    ref.append(harness)
    await harness.prompt("go").wait()
    await harness.prompt("again").wait()
    assert len(checked) == 9 and checked == sorted(checked), checked  # none failed
    assert is_valid_view(build_view(harness.messages))


async def test_a_run_computes_its_prompt_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's prompt (system text and tool specs) is captured once, by the Harness;
    the loop takes that capture instead of computing it again."""
    from crank.agent import loop as loop_module

    made: list[object] = []
    original = loop_module.RunPrompt.of.__func__  # type: ignore[attr-defined]

    def counting(cls: type[loop_module.RunPrompt], system: str, tools: Any) -> Any:
        made.append(system)
        return original(cls, system, tools)

    monkeypatch.setattr(loop_module.RunPrompt, "of", classmethod(counting))
    harness = Harness(system="S", tools=[], model=ScriptedModel([say("hi")]))
    await harness.prompt("go").wait()
    assert made == ["S"]


async def test_a_failed_run_closes_its_open_tool_with_the_id_it_announced() -> None:
    """Issue 34.2: the tool_execution_end that closes a tool after a failure carries
    the toolCallId of its tool_execution_start, not ``""``."""
    model = ScriptedModel([call("echo", {"text": "a"}), say("never reached")])
    harness = Harness(system="s", tools=[echo_tool()], model=model)

    def broken(event: dict[str, Any]) -> None:
        if event["type"] == "tool_execution_start":
            raise OSError("disk full")

    harness.subscribe(broken)
    run = harness.prompt("go")
    consumed = [e async for e in run.events()]
    with pytest.raises(ListenerFailed):
        await run.wait()
    [start] = [e for e in consumed if e["type"] == "tool_execution_start"]
    ends = [e for e in consumed if e["type"] == "tool_execution_end"]
    assert start["toolCallId"]
    assert [e["toolCallId"] for e in ends] == [start["toolCallId"]]


async def test_a_run_cut_off_by_close_is_recorded_as_a_shutdown_not_a_stop() -> None:
    """A window reload mid-run closes the server: the reply was recorded as aborted
    with nothing to tell it from the user's Stop, and the chat showed "Stopped."."""
    from crank.agent.harness import SHUTDOWN_REASON

    model = ScriptedModel([Reply(text="Hello there, I was saying", hang_after=2)], chunk_size=5)
    harness = Harness(system="s", tools=[], model=model)
    run = harness.prompt("go")
    events = run.events()
    async for event in events:
        if event["type"] == "message_update":
            break
    await harness.close()
    last = harness.messages[-1]
    assert last["role"] == "assistant" and last["stopReason"] == "aborted"
    assert last.get("errorMessage") == SHUTDOWN_REASON


class _ListRecord(LazyRecord):
    """A ``LazyRecord`` over a list (the session's is ``StoredRecord``, tested with real
    files in tests/session/test_offsets.py): counts the whole reads, on which thread
    they ran, and fails them when told to."""

    def __init__(self, messages: list[Any], fail: bool = False) -> None:
        self._messages = messages
        self.lineage = Lineage()
        self.reads: list[int] = []
        self.fail = fail

    def __len__(self) -> int:
        return len(self._messages)

    def __getitem__(self, index: Any) -> Any:
        return self._messages[index]

    def read_all(self) -> list[Any]:
        self.reads.append(threading.get_ident())
        if self.fail:
            raise OSError("the session file went away")
        return list(self._messages)

    def sent_as_is(self) -> bool:
        return True


async def test_a_lazy_record_is_read_whole_by_the_next_run_off_the_loop() -> None:
    history = [user_message("old"), assistant_message([{"type": "text", "text": "ok"}])]
    record = _ListRecord(history)
    harness = Harness(system="s", tools=[], model=ScriptedModel([say("new")]))
    harness.replace_messages(record)
    assert harness.messages is record and harness.live_record is record and harness.unread
    assert record.reads == []  # handing it out reads nothing
    await harness.prompt("go").wait()
    assert len(record.reads) == 1 and record.reads[0] != threading.get_ident()
    assert not harness.unread
    assert [m["role"] for m in harness.messages] == ["user", "assistant", "user", "assistant"]
    assert harness.messages[:2] == history
    assert harness.live_record.lineage is record.lineage  # type: ignore[attr-defined]


async def test_a_lazy_record_that_cannot_be_read_ends_the_run_saying_why() -> None:
    record = _ListRecord([user_message("old")], fail=True)
    harness = Harness(system="s", tools=[], model=ScriptedModel([say("never")]))
    harness.replace_messages(record)
    events: list[Any] = []
    harness.subscribe(events.append)
    run = harness.prompt("go")
    await run.wait()
    assert run.stop_reason == "error"
    ends = [e for e in events if e["type"] == "message_end"]
    assert "the session file went away" in ends[-1]["message"]["errorMessage"]
    assert harness.messages is record  # the transcript is still the file's
    record.fail = False
    harness.model = ScriptedModel([say("now")])
    await harness.prompt("again").wait()
    assert [m["role"] for m in harness.messages] == ["user", "user", "assistant"]
