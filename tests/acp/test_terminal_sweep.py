"""The fallback when Crank cannot learn the command's process group (a client on
another machine, where Crank's private folder is not: ``tools/detached.py``): a
client that kills only the process it started (not its group) still leaves nothing
of the command running that carries its mark (issue 26 item 7). After
``terminal/kill``, Crank runs a sweep in a second terminal of the same client that
kills every process carrying the command's ``CRANK_TERMINAL`` mark, in whatever
session (``setsid``) it is. The group end itself: test_terminal_group.py."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path
from typing import Any

import acp
from acp import schema

from tests.support.model_server import ModelServer
from tests.support.processes import marker, survivors

from .client_side import Terminals
from .helpers import crank_acp

TERMINAL = schema.ClientCapabilities(terminal=True)


class ProcessOnlyTerminals(Terminals):
    """Terminals whose kill signals the one process the client started."""

    async def create_terminal(self, *args: Any, **kwargs: Any) -> schema.CreateTerminalResponse:
        answer = await super().create_terminal(*args, **kwargs)
        terminal = self.terminals[answer.terminal_id]

        def kill_process_only() -> None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(terminal.process.pid, signal.SIGKILL)
            terminal.killed = True

        terminal.kill = kill_process_only  # type: ignore[method-assign]
        return answer


class ElsewhereTerminals(ProcessOnlyTerminals):
    """A client whose terminal cannot reach Crank's private folder, as one on another
    machine could not (simulated: the leader is handed a folder that does not exist)."""

    async def create_terminal(
        self, session_id: str, command: str, args: list[str] | None = None, **kwargs: Any
    ) -> schema.CreateTerminalResponse:
        args = list(args or [])
        for at, arg in enumerate(args[:-1]):
            if Path(arg).name == "leader.py":
                args[at + 1] = "/nonexistent-crank-folder/leader"
        return await super().create_terminal(session_id, command, args, **kwargs)


async def test_without_the_group_a_process_only_kill_leaves_no_marked_process(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    mark = marker()
    command = (
        f"bash -c 'exec -a {mark} sleep 300' & "
        f"setsid bash -c 'exec -a {mark} sleep 301' & sleep 120"
    )
    call = {"id": "c1", "name": "bash", "arguments": {"command": command}}
    script = {"replies": [{"toolCalls": [call]}, {"text": "after the cancel"}]}
    client = ElsewhereTerminals(answers=["allow", "allow"])
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
        turn = asyncio.ensure_future(
            conn.prompt(session_id=session.session_id, prompt=[acp.text_block("run")])
        )
        await asyncio.wait_for(client.started.wait(), 120)
        while len(survivors(mark)) < 2:  # both children of the command run
            assert not turn.done()
            await asyncio.sleep(0.05)
        await conn.cancel(session_id=session.session_id)
        assert (await asyncio.wait_for(turn, 120)).stop_reason == "cancelled"
        assert ("kill", "term-1") in client.calls, client.calls
        assert ("create", "term-2") in client.calls, "the sweep ran in a second terminal"
        for _ in range(200):  # SIGKILL is delivered, not instant: wait for it to land
            if not survivors(mark):
                break
            await asyncio.sleep(0.05)
        assert survivors(mark) == []
