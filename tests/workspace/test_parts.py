"""The host's parts, each on its own: approval routing, model configuration, the session
slot, the state's wire JSON and the daily refresh. No host, no editor connection:
the editor is a stand-in that records the questions (the real one is tested in
tests/lsp); the model is the scripted stand-in where one is needed."""

from __future__ import annotations

import asyncio
import datetime
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from crank.agent.harness import Harness
from crank.agent.loop import RunPrompt
from crank.agent.messages import Message, Usage, assistant_message, tool_result, user_message
from crank.agent.model import ModelRequest
from crank.agent.scripted import ScriptedModel, call, say
from crank.agent.tools import ToolCall
from crank.agent.view import GrowingView
from crank.session import ContextSettings, Housekeeper, SessionLog, SessionStore
from crank.session.deferred import is_deferred
from crank.session.request_view import RequestView
from crank.session.tree import SessionTree
from crank.tools import ApprovalRequest, MemoryDocuments
from crank.vendors import ConfigError
from crank.workspace import CrankError, Permissions, Settings
from crank.workspace.approvals import ApprovalRouter
from crank.workspace.daily import DailyRefresh
from crank.workspace.errors import NO_PROVIDER, NO_SUCH_SESSION, REFUSED_WHILE_RUNNING
from crank.workspace.provider import ModelConfig
from crank.workspace.session_slot import SessionSlot
from crank.workspace.wire import messages_json, state_json
from tests.agent.helpers import echo_tool
from tests.support.line_counter import LineCounter


class Asked:
    """The editor's side of a question: records it, answers from a list."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.questions: list[dict[str, Any]] = []
        self.documents = MemoryDocuments()

    async def ask_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        self.questions.append(params)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer  # type: ignore[no-any-return]


def bash_request(call_id: str, command: str = "npm test") -> ApprovalRequest:
    return {
        "toolCallId": call_id,
        "toolName": "bash",
        "arguments": {"command": command},
        "preview": {"kind": "command", "command": command},
    }


def router(tmp_path: Path, editor: Asked, mode: Any = "ask") -> ApprovalRouter:
    permissions = Permissions(tmp_path, mode, tmp_path / "rules.json")
    return ApprovalRouter("file:///w", permissions, editor, lambda: ("s-1", "run-1-abcdef01"))  # type: ignore[arg-type]


async def test_a_question_names_its_call_session_and_run(tmp_path: Path) -> None:
    editor = Asked({"decision": "allow"})
    decision = await router(tmp_path, editor).approve(bash_request("c7"))
    assert decision.allowed
    (question,) = editor.questions
    assert question["toolCallId"] == "c7"
    assert (question["workspace"], question["sessionId"], question["runId"]) == (
        "file:///w",
        "s-1",
        "run-1-abcdef01",
    )


async def test_only_a_real_answer_allows_and_only_the_user_makes_a_rule(tmp_path: Path) -> None:
    editor = Asked(
        {"decision": "maybe"},
        RuntimeError("connection lost"),
        {"decision": "reject", "reason": "not now"},
        {"decision": "allowSession"},
    )
    routes = router(tmp_path, editor)
    unknown = await routes.approve(bash_request("a"))
    assert not unknown.allowed and "unknown decision 'maybe'" in (unknown.reason or "")
    failed = await routes.approve(bash_request("b"))
    assert not failed.allowed and "connection lost" in (failed.reason or "")
    rejected = await routes.approve(bash_request("c"))
    assert not rejected.allowed and rejected.reason == "not now"
    assert (await routes.approve(bash_request("d"))).allowed
    assert (await routes.approve(bash_request("e", "npm test -- --watch"))).allowed
    assert [q["toolCallId"] for q in editor.questions] == ["a", "b", "c", "d"]  # e: the rule


async def test_outside_is_asked_as_its_call_except_in_auto(tmp_path: Path) -> None:
    call = ToolCall("r9", "read", {"path": "/etc/hosts"})
    editor = Asked({"decision": "allow"})
    assert (await router(tmp_path, editor).outside(Path("/etc/hosts"), call)).allowed
    (question,) = editor.questions
    assert (question["toolCallId"], question["toolName"]) == ("r9", "outside")
    assert question["arguments"] == call.arguments
    assert question["preview"] == {"kind": "path", "path": "/etc/hosts"}
    quiet = Asked()
    assert (await router(tmp_path, quiet, "auto").outside(Path("/etc/hosts"), call)).allowed
    assert quiet.questions == []


def test_no_provider_is_kept_as_the_1004_text_and_an_override_changes_nothing(
    tmp_path: Path,
) -> None:
    config = ModelConfig(Settings(), tmp_path, env={}, log=print)
    model = config.configure()
    assert config.error is not None and model.api == "none"
    with pytest.raises(CrankError) as refused:
        config.require()
    assert refused.value.kind == NO_PROVIDER and refused.value.message == config.error
    with pytest.raises(ConfigError):
        config.configure({"api": "scripted", "model": "x"})  # no script: refused
    assert config.error is not None and config.provider is None


async def test_a_scripted_provider_configures_and_lists_itself_first(tmp_path: Path) -> None:
    (tmp_path / "script.json").write_text('{"replies": []}')
    settings = Settings(
        provider_layers=({"api": "scripted", "model": "mine"},), script="script.json"
    )
    config = ModelConfig(settings, tmp_path, env={}, log=print)
    model = config.configure()
    config.require()
    assert (model.api, model.id, config.error) == ("scripted", "mine", None)
    assert (await config.models_json(model))["models"][0] == {
        "api": "scripted",
        "id": "mine",
        "contextWindow": model.context_window,
        "source": "config",
    }


async def test_the_tree_view_reads_a_history_left_unread_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A compacted session opens with its history unread (``SessionTree.read``); the
    tree view needs it, and reads it in a worker thread, as the open would have."""
    store = SessionStore(tmp_path, str(tmp_path / "sessions"))
    written = SessionLog.create(store.directory, cwd=str(tmp_path))
    first = await written.append_message(user_message("old", timestamp=1))
    kept = await written.append_message(user_message("kept", timestamp=2))
    await written.append_compaction("They said old.", kept, 10)
    written.close()
    harness = Harness(system="s", tools=[], model=ScriptedModel([]))
    slot = SessionSlot("file:///w", tmp_path, store, harness, ContextSettings())
    assert await slot.open(written.session_id)
    assert slot.log is not None and slot.log.tree.unread
    readers: list[threading.Thread] = []
    complete = SessionTree.complete

    def noted(tree: SessionTree) -> None:
        readers.append(threading.current_thread())
        complete(tree)

    monkeypatch.setattr(SessionTree, "complete", noted)
    shown = await slot.tree()
    slot.close()
    assert readers and threading.main_thread() not in readers
    assert [entry["id"] for entry in shown["entries"]][:2] == [first, kept]


async def test_the_session_slot_leaves_nothing_on_disk_until_the_first_prompt(
    tmp_path: Path,
) -> None:
    harness = Harness(system="s", tools=[], model=ScriptedModel([say("hi")]))
    store = SessionStore(tmp_path, str(tmp_path / "sessions"))
    slot = SessionSlot("file:///w", tmp_path, store, harness, ContextSettings())
    harness.build_request = slot.build_request
    harness.subscribe(slot.save)
    first = slot.session_id
    assert await slot.tree() == {"tip": None, "entries": []} and not slot.file.exists()
    assert slot.new() != first and not slot.file.exists()
    with pytest.raises(CrankError) as other:
        slot.check("someone-else")
    assert other.value.kind == NO_SUCH_SESSION
    slot.ensure_log()
    run = harness.prompt("hello")
    with pytest.raises(CrankError) as busy:
        slot.new()
    assert busy.value.kind == REFUSED_WHILE_RUNNING
    await run.wait()
    assert slot.file.exists() and slot.log is not None
    assert [m["role"] for m in slot.log.replay()] == ["user", "assistant"]
    assert slot.usage()["output"] > 0
    slot.close()


USAGE: Usage = {"input": 1000, "output": 10, "cacheRead": 0, "cacheWrite": 0}


def _session_of(store: SessionStore, root: Path, turns: int) -> str:
    """A session of ``turns`` tool-call turns with usage, as a run writes it."""
    with SessionLog.create(store.directory, str(root)) as log:
        log.append_message_sync(user_message("go"))
        for turn in range(turns):
            call = {"type": "toolCall", "id": f"c{turn}", "name": "read", "arguments": {}}
            reply = assistant_message([call], stop_reason="toolUse", usage=USAGE)
            log.append_message_sync(reply)
            log.append_message_sync(tool_result(f"c{turn}", "read", "x" * 3000))
        return log.session_id


async def test_opening_a_session_measures_it_off_the_event_loop(tmp_path: Path) -> None:
    """The context meter's first look at a resumed record would repair, clear and size
    its whole view; opening repairs it in its worker thread (``open_and_measure``) and
    the meter reads the newest count (clearing waits for the first request, in a worker
    thread too), so the ``crank/state`` that follows executes as many lines at 500
    turns as at 50 (a look on the event loop executed thousands, in proportion)."""
    harness = Harness(system="s", tools=[], model=ScriptedModel([]))
    store = SessionStore(tmp_path, str(tmp_path / "sessions"))
    slot = SessionSlot(
        "file:///w", tmp_path, store, harness, ContextSettings(clear_at_tokens=2_000)
    )
    counts = []
    for turns in (50, 500):
        assert await slot.open(_session_of(store, tmp_path, turns))
        with LineCounter() as counted:
            usage = slot.usage()
        assert usage["input"] == turns * USAGE["input"] and usage["contextTokens"] > 0
        counts.append(counted.lines)
    slot.close()
    assert counts[0] == counts[1], f"{counts}: the state after the open measured the record"


async def test_a_reopened_session_meters_what_it_did_and_measures_its_view_later_off_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reopened, a session's meter starts from its newest reply's count, as the meter
    read it before (the open used to clear the view anew and estimate all of it,
    uncalibrated: 26% over here); clearing and sizing the whole view waits for the
    first request, and runs once, in a worker thread."""
    replies = [call("echo", {"text": f"{n} " + "x" * 3000}) for n in range(12)]
    harness = Harness(
        system="s", tools=[echo_tool()], model=ScriptedModel([*replies, say("done"), say("ok")])
    )
    store = SessionStore(tmp_path, str(tmp_path / "sessions"))
    slot = SessionSlot(
        "file:///w", tmp_path, store, harness, ContextSettings(clear_at_tokens=4_000)
    )
    harness.before_request, harness.build_request = slot.before_request, slot.build_request
    harness.subscribe(slot.save)
    slot.ensure_log()
    await harness.prompt("go").wait()
    metered = slot.usage()["contextTokens"]
    measured: list[threading.Thread] = []
    measure = RequestView.measure

    def noted(view: RequestView, record: Sequence[Message], prompt: RunPrompt) -> None:
        measured.append(threading.current_thread())
        measure(view, record, prompt)

    monkeypatch.setattr(RequestView, "measure", noted)
    session_id = slot.session_id
    slot.new()
    try:
        assert await slot.open(session_id)
        reopened = slot.usage()["contextTokens"]
        assert abs(reopened - metered) <= metered // 100, (metered, reopened)
        assert measured == []  # nothing but the newest count and what follows it
        await harness.prompt("and then?").wait()
        assert len(measured) == 1 and measured[0] is not threading.main_thread()
        assert slot.usage()["contextTokens"] > 0
    finally:
        slot.close()


async def test_the_meter_stays_off_the_view_while_a_worker_measures_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the worker thread measures a resumed record's view, ``crank/state`` on the
    event loop answers from the count and touches none of the memos the worker fills
    (two threads in them at once would corrupt them)."""
    harness = Harness(system="s", tools=[], model=ScriptedModel([say("done")]))
    store = SessionStore(tmp_path, str(tmp_path / "sessions"))
    slot = SessionSlot("file:///w", tmp_path, store, harness, ContextSettings())
    harness.before_request, harness.build_request = slot.before_request, slot.build_request
    harness.subscribe(slot.save)
    assert await slot.open(_session_of(store, tmp_path, 20))
    counted = slot.usage()["contextTokens"]
    started, release = threading.Event(), threading.Event()
    views: list[threading.Thread] = []
    measure, sent = RequestView.measure, RequestView._sent

    def held(view: RequestView, record: Sequence[Message], prompt: RunPrompt) -> None:
        started.set()
        assert release.wait(10)
        measure(view, record, prompt)

    def noted(view: RequestView, *args: Any, **options: Any) -> Any:
        views.append(threading.current_thread())
        return sent(view, *args, **options)

    def repaired(view: GrowingView, record: Sequence[Message]) -> Any:
        views.append(threading.current_thread())
        return shared(view, record)

    shared = GrowingView.shared
    monkeypatch.setattr(RequestView, "measure", held)
    monkeypatch.setattr(RequestView, "_sent", noted)
    monkeypatch.setattr(GrowingView, "shared", repaired)
    run = harness.prompt("go on")
    try:
        assert await asyncio.to_thread(started.wait, 10)
        assert slot.usage()["contextTokens"] == counted  # the count, while it measures
        assert views == []
    finally:
        release.set()
        await run.wait()
        slot.close()
    assert views and threading.main_thread() in views  # the request, built after it


async def test_a_failed_first_estimate_does_not_keep_a_session_from_opening(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The estimate taken at the open is only a figure: should it fail, the session
    opens all the same and the meter measures it when asked, as before."""

    def broken(*_: object) -> None:
        raise RuntimeError("a bug in the estimate")

    harness = Harness(system="s", tools=[], model=ScriptedModel([]))
    store = SessionStore(tmp_path, str(tmp_path / "sessions"))
    slot = SessionSlot("file:///w", tmp_path, store, harness, ContextSettings())
    session_id = _session_of(store, tmp_path, 3)
    monkeypatch.setattr(Housekeeper, "resume", broken)
    assert await slot.open(session_id)
    assert len(harness.messages) == 7 and slot.usage()["contextTokens"] > 0
    slot.close()


async def _first_request_lines(root: Path, store: SessionStore, turns: int) -> int:
    """The lines the first request's hooks (``before_request``, ``build_request``)
    execute after a session of ``turns`` turns is opened."""
    harness = Harness(system="s", tools=[], model=ScriptedModel([say("done")]))
    slot = SessionSlot("file:///w", root, store, harness, ContextSettings())
    counted = LineCounter()

    async def before(harness: Harness) -> None:
        with counted:
            await slot.before_request(harness)

    async def build(record: Sequence[Message], prompt: RunPrompt) -> ModelRequest:
        with counted:
            return await slot.build_request(record, prompt)

    harness.before_request, harness.build_request = before, build
    harness.subscribe(slot.save)
    try:
        assert await slot.open(_session_of(store, root, turns))
        await harness.prompt("and now the docs").wait()
        assert [m["role"] for m in harness.messages[-2:]] == ["user", "assistant"]
        assert len(harness.messages) == 2 + 2 * turns + 1
    finally:
        slot.close()
    return counted.lines


async def test_the_first_prompt_after_an_open_repairs_only_what_it_adds(tmp_path: Path) -> None:
    """The Harness takes the record the open repaired as it is (its lineage with it);
    the whole view is cleared, sized and scanned for images once, in a worker thread,
    before the first request (``RequestView.measure_resumed``), whose clearing is then
    the session's: on the event loop the first request after a resume repairs, clears,
    sizes and scans only the new prompt, as many lines at 500 turns as at 100. Without
    each, the count grew with the record (the view repaired whole again; the record
    sized twice more as clearing started over; every message looked at for images)."""
    store = SessionStore(tmp_path, str(tmp_path / "sessions"))
    counts = [await _first_request_lines(tmp_path, store, turns) for turns in (100, 500)]
    assert counts[0] == counts[1], f"{counts}: the first request measured the whole record"


def test_state_json_adds_optional_keys_only_when_they_apply(tmp_path: Path) -> None:
    from crank.agent.view import Repairs

    harness = Harness(system="s", tools=[], model=ScriptedModel([]))
    usage: Any = {"contextTokens": 0}
    common: dict[str, Any] = {
        "session_id": "s-1",
        "harness": harness,
        "permission_mode": "ask",
        "trusted": False,
        "sandbox": {"mode": "off"},
        "usage": usage,
        "session_file": tmp_path / "s-1.jsonl",
        "seq": 3,
    }
    idle = state_json(**common, run_id=None, config_error=None, repairs=Repairs())
    assert list(idle) == [
        "sessionId",
        "running",
        "model",
        "permissionMode",
        "trusted",
        "sandbox",
        "queue",
        "usage",
        "sessionFile",
        "seq",
        "branched",
    ]
    assert idle["branched"] is False
    unknown = state_json(**common, run_id=None, config_error=None, repairs=Repairs(), branched=None)
    assert "branched" not in unknown  # a history left unread whose compaction did not say
    busy = state_json(**common, run_id="run-1-x", config_error="set a key", repairs=Repairs(1))
    assert list(busy)[2] == "runId" and busy["configError"] == "set a key"
    assert busy["viewRepairs"]["interruptedResults"] == 1
    assert "baseUrl" not in idle["model"]
    at = state_json(
        **common,
        run_id=None,
        config_error=None,
        repairs=Repairs(),
        base_url="http://user:secret@127.0.0.1:8080/v1",
    )
    assert at["model"]["baseUrl"] == "http://***@127.0.0.1:8080/v1"


async def test_the_daily_refresh_fires_once_per_new_day() -> None:
    days = [datetime.date(2026, 1, 1)]
    refreshed: list[datetime.date] = []
    woke = asyncio.Event()

    async def refresh() -> None:
        refreshed.append(days[-1])
        woke.set()

    looked = asyncio.Semaphore(0)

    def wait() -> float:
        looked.release()  # one more look at the date
        return 0.001

    async def midnights_pass(count: int) -> None:
        """Until ``count`` more midnights have been looked at (events, not a duration:
        on a loaded machine a fixed sleep may see none and pass for the wrong reason)."""
        for _ in range(count):
            await looked.acquire()

    daily = DailyRefresh(refresh, lambda: days[-1], wait=wait)
    daily.start()
    try:
        await midnights_pass(5)  # many midnights pass on the same date: nothing
        assert refreshed == []
        days.append(datetime.date(2026, 1, 2))
        await woke.wait()
        looked = asyncio.Semaphore(0)  # count only the midnights after the refresh
        await midnights_pass(5)
        assert refreshed == [datetime.date(2026, 1, 2)]
    finally:
        daily.stop()


async def test_after_a_switch_the_configured_model_is_still_listed(tmp_path: Path) -> None:
    """Before, crank/models added only the current model when neither the server nor
    the catalog listed it: after a switch the configured one vanished from the list."""
    settings = Settings(
        provider_layers=({"api": "openai", "baseUrl": "http://127.0.0.1:9/v1", "model": "mine"},)
    )
    config = ModelConfig(settings, tmp_path, env={}, log=print)
    config.configure()
    switched = config.configure({"api": "openai", "model": "other"})
    listed = [(m["id"], m["source"]) for m in (await config.models_json(switched))["models"]]
    assert listed[:2] == [("other", "config"), ("mine", "config")]
    assert listed.count(("mine", "config")) == 1


async def test_a_reopened_session_decodes_only_what_is_shown_until_a_run_reads_it(
    tmp_path: Path,
) -> None:
    """Opened from its offset index, a session's messages stay in the file: the open,
    the meter and a page of the transcript decode that page and the newest reply's
    tail; the next prompt reads the rest, in a worker thread, and the model is sent the
    whole transcript as before."""
    harness = Harness(system="s", tools=[], model=ScriptedModel([say("noted")]))
    store = SessionStore(tmp_path, str(tmp_path / "sessions"))
    slot = SessionSlot("file:///w", tmp_path, store, harness, ContextSettings())
    harness.before_request, harness.build_request = slot.before_request, slot.build_request
    harness.subscribe(slot.save)
    session_id = _session_of(store, tmp_path, 300)  # 601 messages
    try:
        assert await slot.open(session_id)
        assert slot.log is not None
        entries = slot.log.tree.entries

        def decoded() -> int:
            return sum(not is_deferred(e["message"]) for e in entries)

        usage = slot.usage()
        assert usage["input"] == 300 * USAGE["input"] and usage["contextTokens"] > 0
        assert decoded() <= 3  # for the meter: the first, the newest reply, what follows
        page = messages_json(harness, limit=50)
        assert page["total"] == 601 and len(page["messages"]) == 50
        assert decoded() <= 53
        model = ScriptedModel([say("noted")])
        harness.model = model
        await harness.prompt("and now?").wait()
        assert decoded() == len(entries) == 603 and len(harness.messages) == 603
        sent = model.requests[0].messages  # old results cleared by the default policy
        replayed = slot.log.replay()
        assert [(m["role"], m["timestamp"]) for m in sent] == [
            (m["role"], m["timestamp"]) for m in replayed[:602]
        ]
    finally:
        slot.close()
