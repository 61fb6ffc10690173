"""One owner for each live fact (docs/architecture.md, "Who owns each live fact"): what
``crank/state`` says is read from that owner only, so its parts never disagree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .test_host import RecordingEditor, scripted_host


class StateAtEachEvent(RecordingEditor):
    """Reads ``crank/state`` as each event is delivered (a client asking at that moment)."""

    def __init__(self) -> None:
        super().__init__()
        self.host: Any = None
        self.seen: list[tuple[str, dict[str, Any]]] = []

    def send_event(self, params: dict[str, Any]) -> None:
        super().send_event(params)
        self.seen.append((params["event"]["type"], self.host.state()))


async def test_running_and_run_id_in_crank_state_come_from_one_owner(tmp_path: Path) -> None:
    """``running`` came from the Harness and ``runId`` from the host, which lets go of
    its run only after ``agent_settled`` is sent: a state read then said not running
    yet named a run. Both are the Harness's now."""
    editor = StateAtEachEvent()
    host = scripted_host(tmp_path, editor, [{"text": "hello"}])
    editor.host = host
    await host.start()
    try:
        host.prompt_run("hi")
        run = host.harness.current_run
        assert run is not None
        await run.wait()
    finally:
        await host.close()
    assert any(kind == "agent_settled" for kind, _ in editor.seen)
    for kind, state in editor.seen:
        assert state["running"] == ("runId" in state), (kind, state)


async def test_the_tool_list_has_one_owner(tmp_path: Path) -> None:
    """The host's tools are the Harness's (they were two lists, re-synced by hand)."""
    editor = RecordingEditor()
    host = scripted_host(tmp_path, editor, [])
    await host.start()
    try:
        assert host.tools is host.harness.tools
        await host.set_permission_mode("readOnly")
        assert host.tools is host.harness.tools
        assert [tool["name"] for tool in host.state()["tools"]] == [t.name for t in host.tools]
    finally:
        await host.close()
