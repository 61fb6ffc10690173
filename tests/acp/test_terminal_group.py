"""A command run in the client's terminal is ended as a whole process group, by Crank.

The command is started under ``crank.tools.leader``: in a session of its own, whose
id it writes to a file in a private folder Crank made (``tools/detached.py``). On a
cancel or a timeout Crank signals that group itself (SIGTERM, then SIGKILL) before it
asks the client to kill the terminal, so a child that cleared its environment
(``env -i``: the ``CRANK_TERMINAL`` mark is gone) or moved to a session of its own
(``setsid``) does not outlive the abort, whatever the client's kill does. Real
``crank acp``, the real ACP SDK client, real processes found by pid.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import acp
import pytest
from acp import schema

from crank.tools.limits import Cage
from crank.tools.sandbox import probe
from tests.support.model_server import ModelServer
from tests.support.processes import HOST_PYTHON, marker, survivors

from .client_side import Recorder, Terminals
from .helpers import crank_acp
from .test_terminal_sweep import ProcessOnlyTerminals

TERMINAL = schema.ClientCapabilities(terminal=True)


def escaping(mark: str) -> str:
    """A command whose two children escape a marker sweep and a client's kill: one
    without the mark in its environment, one orphaned in a session of its own (also
    without the mark); then it blocks."""
    return (
        f"env -i bash -c 'exec -a {mark} sleep 1000' & "
        f"(setsid env -i bash -c 'exec -a {mark} sleep 1001' &) ; sleep 120"
    )


def alive(pid: int) -> bool:
    """Is ``pid`` a live process (a zombie is dead: only its reaping is pending)?"""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


async def gone(pids: list[int]) -> list[int]:
    """The pids still alive once SIGKILL had time to land (polled, bounded)."""
    for _ in range(400):
        left = [pid for pid in pids if alive(pid)]
        if not left:
            return []
        await asyncio.sleep(0.05)
    return left


async def run_and_cancel(
    tmp_path: Path, client: Terminals, sandbox: str, command: str, mark: str
) -> list[int]:
    """Run ``command`` in ``client``'s terminal, cancel once both marked children
    run; the pids of those children."""
    folder = tmp_path / "project"
    folder.mkdir()
    call = {"id": "c1", "name": "bash", "arguments": {"command": command}}
    script = {"replies": [{"toolCalls": [call]}, {"text": "after the cancel"}]}
    async with (
        ModelServer(script) as model,
        crank_acp(
            model,
            tmp_path,
            client,
            "--permission-mode",
            "auto",
            "--sandbox",
            sandbox,
            capabilities=TERMINAL,
        ) as conn,
    ):
        session = await conn.new_session(cwd=str(folder))
        turn = asyncio.ensure_future(
            conn.prompt(session_id=session.session_id, prompt=[acp.text_block("run")])
        )
        await asyncio.wait_for(client.started.wait(), 120)
        while len(survivors(mark)) < 2:  # both children of the command run
            assert not turn.done(), client.calls
            await asyncio.sleep(0.05)
        pids = survivors(mark)
        await conn.cancel(session_id=session.session_id)
        assert (await asyncio.wait_for(turn, 120)).stop_reason == "cancelled"
        again = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("more")])
        assert again.stop_reason == "end_turn"
    return pids


@pytest.mark.parametrize("kind", ["group", "process-only"])
@pytest.mark.parametrize("sandbox", ["off", "workspace-write"])
async def test_an_abort_leaves_no_process_of_the_command(
    tmp_path: Path, kind: str, sandbox: str
) -> None:
    mark = marker()
    client = Terminals(["allow"]) if kind == "group" else ProcessOnlyTerminals(["allow"])
    pids = await run_and_cancel(tmp_path, client, sandbox, escaping(mark), mark)
    assert ("kill", "term-1") in client.calls, client.calls
    assert await gone(pids) == [], f"left running: {pids}"
    assert not any(call[1] == "term-2" for call in client.calls), (
        "the group was learnt: no sweep in a second terminal",
        client.calls,
    )


def first_call(client: Recorder) -> Any:
    return client.of("tool_call")[0]


async def test_the_user_sees_and_approves_their_own_command(tmp_path: Path) -> None:
    """The wrapper (env -i, the leader, the limits, the sandbox) is what the terminal
    runs; the question and the tool card show the command the model wrote."""
    folder = tmp_path / "project"
    folder.mkdir()
    command = "echo shown-as-written"
    call = {"id": "c1", "name": "bash", "arguments": {"command": command}}
    script = {"replies": [{"toolCalls": [call]}, {"text": "done"}]}
    client = Terminals(["allow"])
    async with (
        ModelServer(script) as model,
        crank_acp(model, tmp_path, client, capabilities=TERMINAL) as conn,
    ):
        session = await conn.new_session(cwd=str(folder))
        answer = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("run")])
        assert answer.stop_reason == "end_turn"
    [question] = client.questions
    assert question.tool_call.raw_input == {"command": command}
    assert command in (question.tool_call.title or "")
    card = first_call(client)
    assert card.raw_input == {"command": command}
    assert command in card.title and "leader" not in card.title and "env -i" not in card.title
    [created] = client.created
    assert created.args and created.args[-1] == command and created.args[-2] == "-c"
    assert any(Path(arg).name == "leader.py" for arg in created.args), created.args


def test_leader_file_is_private(tmp_path: Path) -> None:
    """The folder the leader writes to is made by Crank, for Crank's user only."""
    from crank.tools.detached import detached

    job = detached("true", tmp_path, None)
    try:
        assert job.folder.stat().st_mode & 0o777 == 0o700
        assert os.fspath(job.leader_file) in job.argv
    finally:
        job.close()
    assert not job.folder.exists()


async def run_limited(tmp_path: Path, command: str, limits: dict[str, int]) -> str:
    """Run ``command`` in the client's terminal, confined, with ``sandbox.limits`` from
    the user config file; the tool result the model was sent."""
    folder = tmp_path / "project"
    folder.mkdir()
    config = tmp_path / "home" / ".config" / "crank" / "config.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"sandbox": {"limits": limits}}))
    call = {"id": "c1", "name": "bash", "arguments": {"command": command, "timeout": 8}}
    script = {"replies": [{"toolCalls": [call]}, {"text": "done"}]}
    client = Terminals(["allow"])
    async with (
        ModelServer(script) as model,
        crank_acp(
            model, tmp_path, client, "--permission-mode", "auto", capabilities=TERMINAL
        ) as conn,
    ):
        session = await conn.new_session(cwd=str(folder))
        answer = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("run")])
        assert answer.stop_reason == "end_turn"
        assert [update.status for update in client.of("tool_call_update")][-1] == "failed"
        messages = model.requests[-1]["body"]["messages"]
    [result] = [m["content"] for m in messages if m.get("role") == "tool"]
    return str(result)


async def test_a_fork_bomb_in_the_terminal_ends_as_an_error_naming_the_limit(
    tmp_path: Path,
) -> None:
    assert probe().available, f"the sandbox tests need bubblewrap: {probe().detail}"
    probe_cage = Cage.make(8)
    assert probe_cage is not None, "no pids cgroup can be made here"
    probe_cage.close()
    # quiet (its fork errors go nowhere): a long result may be cleared from the context
    bomb = "bomb() { bomb | bomb & }; bomb 2>/dev/null; sleep 2"
    result = await run_limited(tmp_path, bomb, {"processes": 64})
    assert "limit of 64 processes (sandbox.limits.processes)" in result, result


async def test_a_memory_hog_in_the_terminal_fails_to_allocate(tmp_path: Path) -> None:
    hog = f"{HOST_PYTHON} -c 'bytearray(1024 * 1024 * 1024)'"  # seen in the sandbox
    result = await run_limited(tmp_path, hog, {"memoryMB": 256})
    assert "MemoryError" in result and "exited with code 1" in result, result
    assert "sandbox.limits.memoryMB" in result, result


async def test_a_timeout_ends_the_whole_group_too(tmp_path: Path) -> None:
    """The command's children write their pids before it blocks, so the test knows
    them without racing the timeout; a process-only client, the sandbox off."""
    folder = tmp_path / "project"
    folder.mkdir()
    command = (
        "env -i bash -c 'echo $$ >> pids; exec sleep 1000' & "
        "(setsid env -i bash -c 'echo $$ >> pids; exec sleep 1001' &) ; "
        'until [ "$(wc -l < pids)" -ge 2 ] 2>/dev/null; do sleep 0.05; done; sleep 120'
    )
    call = {"id": "c1", "name": "bash", "arguments": {"command": command, "timeout": 15}}
    script = {"replies": [{"toolCalls": [call]}, {"text": "timed out"}]}
    client = ProcessOnlyTerminals(["allow"])
    async with (
        ModelServer(script) as model,
        crank_acp(
            model,
            tmp_path,
            client,
            "--permission-mode",
            "auto",
            "--sandbox",
            "off",
            capabilities=TERMINAL,
        ) as conn,
    ):
        session = await conn.new_session(cwd=str(folder))
        answer = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("run")])
        assert answer.stop_reason == "end_turn"
        messages = model.requests[-1]["body"]["messages"]
    [result] = [str(m["content"]) for m in messages if m.get("role") == "tool"]
    assert "timed out after 15 seconds" in result, result
    pids = [int(line) for line in (folder / "pids").read_text().split()]
    assert len(pids) == 2, pids
    assert await gone(pids) == [], f"left running: {pids}"
