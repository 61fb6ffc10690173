"""The client's capabilities, used when offered: ``fs/*`` and ``terminal/*``.

The real ``crank acp`` over stdio, driven by the official SDK's client side, against
the loopback model server. The editor side of each capability is implemented for real
in ``client_side`` (buffers that differ from disk; terminals that run the command as
real processes in an environment holding a provider key). The SDK parses every
message in both directions into its schema models, so each request Crank sends is
validated against ACP's schema where it arrives.
"""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import acp
import pytest
from acp import schema

from crank.acp import files as acp_files
from crank.acp.files import AcpFiles
from crank.acp.wire import Peer
from crank.agent.tools import ToolError
from tests.support.model_server import ModelServer

from .client_side import EDITOR_KEY, EditorBuffers, Terminals
from .helpers import crank_acp

FS = schema.ClientCapabilities(
    fs=schema.FileSystemCapabilities(read_text_file=True, write_text_file=True)
)
TERMINAL = schema.ClientCapabilities(terminal=True)
DISK = "def add(a, b):\n    return a - b\n"
BUFFER = "def add(a, b):\n    return a - b  # unsaved\n"


def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "calc.py").write_text(DISK)
    return folder


def tool_results(model: ModelServer) -> list[str]:
    """The tool results the model was sent, in order (the last request holds them all)."""
    messages = model.requests[-1]["body"]["messages"]
    return [json.dumps(m) for m in messages if m.get("role") == "tool"]


def read_then_edit(old: str, new: str, answer: str) -> dict[str, Any]:
    """A model that reads calc.py, edits ``old`` into ``new`` there, then says ``answer``."""
    edit = {"path": "calc.py", "oldText": old, "newText": new}
    return {
        "replies": [
            {"toolCalls": [{"id": "c1", "name": "read", "arguments": {"path": "calc.py"}}]},
            {"toolCalls": [{"id": "c2", "name": "edit", "arguments": edit}]},
            {"text": answer},
        ]
    }


async def one_prompt(
    tmp_path: Path,
    folder: Path,
    script: dict[str, Any],
    client: EditorBuffers,
    capabilities: schema.ClientCapabilities | None = FS,
    text: str = "fix",
) -> tuple[ModelServer, schema.PromptResponse]:
    """The real ``crank acp`` with this client: one session in ``folder``, one prompt
    run to its end; the model server (its requests) and the prompt's answer."""
    async with (
        ModelServer(script) as model,
        crank_acp(model, tmp_path, client, capabilities=capabilities) as conn,
    ):
        session = await conn.new_session(cwd=str(folder))
        answer = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block(text)])
    return model, answer


READ_THEN_EDIT = read_then_edit(
    "return a - b  # unsaved", "return a + b  # unsaved", "Fixed the buffer."
)


async def test_reads_see_the_unsaved_buffer_and_edits_go_through_the_client(
    tmp_path: Path,
) -> None:
    folder = project(tmp_path)
    calc = str((folder / "calc.py").resolve())
    client = EditorBuffers(answers=["allow"], **{calc: BUFFER})
    model, answer = await one_prompt(tmp_path, folder, READ_THEN_EDIT, client)
    assert answer.stop_reason == "end_turn"
    read_result, edit_result = tool_results(model)
    assert "# unsaved" in read_result, "the read saw the editor's buffer, not the disk"
    assert "differs from the file on disk" in read_result
    assert calc in client.reads, "asked with the absolute path"
    assert client.writes == [(calc, "def add(a, b):\n    return a + b  # unsaved\n")]
    assert client.events.index("ask") < client.events.index("write"), "permission first"
    assert (folder / "calc.py").read_text() == client.writes[0][1]
    assert "in the editor and on disk" in edit_result
    final = [u for u in client.of("tool_call_update") if u.status is not None]
    assert [u.status for u in final] == ["completed", "in_progress", "completed"]
    assert final[-1].content[0].type == "diff", "the edit's change, as the client wrote it"
    assert final[-1].content[0].new_text == client.writes[0][1]


async def test_a_rejected_edit_never_reaches_the_client(tmp_path: Path) -> None:
    folder = project(tmp_path)
    calc = str((folder / "calc.py").resolve())
    client = EditorBuffers(answers=["reject"], **{calc: BUFFER})
    model, answer = await one_prompt(tmp_path, folder, READ_THEN_EDIT, client)
    assert answer.stop_reason == "end_turn"
    assert client.writes == []
    assert (folder / "calc.py").read_text() == DISK
    assert "declined" in tool_results(model)[1]


async def test_outside_the_workspace_the_client_is_not_asked(tmp_path: Path) -> None:
    folder = project(tmp_path)
    secret = tmp_path / "elsewhere.txt"
    secret.write_text("outside\n")
    script = {
        "replies": [
            {"toolCalls": [{"id": "c1", "name": "read", "arguments": {"path": str(secret)}}]},
            {"text": "done"},
        ]
    }
    client = EditorBuffers(answers=["reject"])
    model, _ = await one_prompt(tmp_path, folder, script, client, text="read it")
    assert client.reads == [], "the workspace bound is checked before the client is asked"
    assert "outside the workspace" in tool_results(model)[0]


@pytest.mark.parametrize("offered", ["nothing", "read only", "read fails"])
async def test_without_both_fs_capabilities_the_tools_use_the_disk(
    tmp_path: Path, offered: str
) -> None:
    folder = project(tmp_path)
    calc = str((folder / "calc.py").resolve())
    client = EditorBuffers(answers=["allow"], **{calc: BUFFER})
    client.fail_reads = offered == "read fails"
    capabilities = {
        "nothing": schema.ClientCapabilities(),
        "read only": schema.ClientCapabilities(
            fs=schema.FileSystemCapabilities(read_text_file=True)
        ),
        "read fails": FS,
    }[offered]
    script = read_then_edit("return a - b", "return a + b", "Fixed.")
    model, _ = await one_prompt(tmp_path, folder, script, client, capabilities)
    read_result = tool_results(model)[0]
    assert "# unsaved" not in read_result and "return a - b" in read_result
    assert client.writes == []
    assert (folder / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert bool(client.reads) == (offered == "read fails")


async def test_cancel_withdraws_a_read_the_client_never_answers(tmp_path: Path) -> None:
    folder = project(tmp_path)
    client = EditorBuffers()
    client.hang_reads = True
    script = {
        "replies": [
            {"toolCalls": [{"id": "c1", "name": "read", "arguments": {"path": "calc.py"}}]},
            {"text": "after the cancel"},
        ]
    }
    async with (
        ModelServer(script) as model,
        crank_acp(model, tmp_path, client, capabilities=FS) as conn,
    ):
        session = await conn.new_session(cwd=str(folder))
        turn = asyncio.ensure_future(
            conn.prompt(session_id=session.session_id, prompt=[acp.text_block("read")])
        )
        await asyncio.wait_for(client.reading.wait(), 120)
        await conn.cancel(session_id=session.session_id)
        assert (await asyncio.wait_for(turn, 120)).stop_reason == "cancelled"
        again = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("more")])
        assert again.stop_reason == "end_turn"
        assert client.text().endswith("after the cancel")


async def test_a_read_the_client_never_answers_is_a_bounded_tool_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The bound itself, on Crank's own connection object: nobody writes an answer."""
    monkeypatch.setattr(acp_files, "CLIENT_SECONDS", 0.05)
    (tmp_path / "a.txt").write_text("text\n")
    sent = io.BytesIO()
    files = AcpFiles(Peer(sent), lambda: "s-1")
    with pytest.raises(ToolError, match="did not answer fs/read_text_file"):
        await files.read((tmp_path / "a.txt").resolve())
    request = json.loads(sent.getvalue().splitlines()[0])
    assert request["method"] == "fs/read_text_file"
    assert request["params"] == {"sessionId": "s-1", "path": str((tmp_path / "a.txt").resolve())}


async def test_binary_and_missing_files_are_not_asked_about(tmp_path: Path) -> None:
    (tmp_path / "blob.bin").write_bytes(b"\0\1\2")
    sent = io.BytesIO()
    files = AcpFiles(Peer(sent), lambda: "s-1")
    assert await files.read(tmp_path / "blob.bin") is None
    assert await files.read(tmp_path / "missing.txt") is None
    assert await files.read(tmp_path) is None
    assert sent.getvalue() == b""


def bash(command: str) -> dict[str, Any]:
    return {"toolCalls": [{"id": "c1", "name": "bash", "arguments": {"command": command}}]}


async def test_a_command_runs_in_the_clients_terminal_without_its_environment(
    tmp_path: Path,
) -> None:
    folder = project(tmp_path)
    command = 'echo "key=${ANTHROPIC_API_KEY:-none}"; echo "done-$((40 + 2))"; exit 3'
    script = {"replies": [bash(command), {"text": "ran it"}]}
    client = Terminals(answers=["allow", "allow"])
    async with (
        ModelServer(script) as model,
        crank_acp(
            model, tmp_path, client, "--permission-mode", "auto", capabilities=TERMINAL
        ) as conn,
    ):
        session = await conn.new_session(cwd=str(folder))
        answer = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("run")])
        assert answer.stop_reason == "end_turn"
    [created] = client.created
    assert Path(created.command).name == "env" and created.args and created.args[0] == "-i"
    assert created.cwd == str(folder.resolve())
    assert created.output_byte_limit and created.output_byte_limit > 0
    assert not any("sk-test-acp" in arg for arg in created.args), "the agent's key stays home"
    assert [method for method, _ in client.calls] == ["create", "wait", "output", "release"]
    [result] = tool_results(model)
    assert "key=none" in result, "the editor's environment did not reach the command"
    assert EDITOR_KEY not in result
    assert "done-42" in result and "exited with code 3" in result
    shown = [
        u
        for u in client.of("tool_call_update")
        if any(isinstance(c, schema.TerminalToolCallContent) for c in u.content or [])
    ]
    assert shown, "the tool call embeds the terminal"
    assert all(c.terminal_id == "term-1" for c in shown[0].content or [])
    assert shown[-1].status == "failed", "the final update keeps the terminal"


async def test_cancel_mid_command_kills_and_releases_the_terminal(tmp_path: Path) -> None:
    folder = project(tmp_path)
    script = {"replies": [bash("sleep 60"), {"text": "after the cancel"}]}
    client = Terminals(answers=["allow", "allow"])
    async with (
        ModelServer(script) as model,
        crank_acp(
            model, tmp_path, client, "--permission-mode", "auto", capabilities=TERMINAL
        ) as conn,
    ):
        session = await conn.new_session(cwd=str(folder))
        turn = asyncio.ensure_future(
            conn.prompt(session_id=session.session_id, prompt=[acp.text_block("run")])
        )
        await asyncio.wait_for(client.started.wait(), 120)
        await client.wait_for(lambda: ("wait", "term-1") in client.calls, "the wait for exit")
        await conn.cancel(session_id=session.session_id)
        assert (await asyncio.wait_for(turn, 120)).stop_reason == "cancelled"
        await client.wait_for(
            lambda: client.terminals["term-1"].released, f"the release ({client.calls})"
        )
        terminal = client.terminals["term-1"]
        assert ("kill", "term-1") in client.calls, client.calls
        # Crank ended the command's group itself (SIGTERM) before it asked for the kill
        assert terminal.process.returncode is not None, terminal.output
        again = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("more")])
        assert again.stop_reason == "end_turn"
        assert client.text().endswith("after the cancel")


async def test_local_commands_keeps_commands_here(tmp_path: Path) -> None:
    folder = project(tmp_path)
    script = {"replies": [bash("echo local-$((1 + 1))"), {"text": "ran it"}]}
    client = Terminals(answers=["allow", "allow"])
    async with (
        ModelServer(script) as model,
        crank_acp(
            model,
            tmp_path,
            client,
            "--permission-mode",
            "auto",
            "--local-commands",
            capabilities=TERMINAL,
        ) as conn,
    ):
        session = await conn.new_session(cwd=str(folder))
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("run")])
    assert client.created == []
    assert "local-2" in tool_results(model)[0]
