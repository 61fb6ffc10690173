"""Runs end to end: abort (silent stream, long bash), steer and follow-up, clear queue,
permissions, edits to open documents, multi-root, fix-this-file, restart and resume."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from lsprotocol import types

from crank.lsp import pygls_adapter
from tests.support.model_server import ModelServer

from .helpers import Crank, plain, provider_for, read_text, running_server


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["event"]["type"] for e in events]


def tool_ends(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["event"] for e in events if e["event"]["type"] == "tool_execution_end"]


def session_lines(state: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in read_text(Path(state["sessionFile"])).splitlines()]


def project(tmp_path: Path, name: str = "project") -> Path:
    folder = tmp_path / name
    folder.mkdir(exist_ok=True)
    return folder


def options(model: ModelServer, tmp_path: Path, **extra: Any) -> dict[str, Any]:
    return {"provider": provider_for(model.url), "sessionDir": str(tmp_path / "sessions"), **extra}


def by_prompt(*pairs: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """A model script that answers by the words of the last user turn, first match
    wins. An abort or kill may land before the first request reaches the server; with
    replies served in order, the next prompt would then be given the first prompt's
    (hanging) reply. Consecutive user turns are sent merged, so put the later
    prompt's word first."""
    return {"rules": [{"lastUserContains": word, "reply": reply} for word, reply in pairs]}


async def server_got(model: ModelServer, text: str) -> None:
    """Wait until a request holding ``text`` has reached the model server."""
    for _ in range(1500):
        if any(text in json.dumps(r["body"]) for r in model.requests):
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"the model server never received {text!r}")


async def started(crank: Crank, text: str, **params: Any) -> str:
    answer = await crank.request("crank/prompt", {"text": text, **params})
    run_id: str = answer["runId"]
    await crank.wait_for(lambda e: e.get("runId") == run_id and e["event"]["type"] == "agent_start")
    return run_id


async def test_abort_during_a_silent_stream(tmp_path: Path) -> None:
    script = by_prompt(("answer", {"text": "fine"}), ("hang", {"text": "never", "hangAfter": 0}))
    with ModelServer(script) as model:
        async with running_server(tmp_path, [project(tmp_path)], options(model, tmp_path)) as crank:
            run_id = await started(crank, "hang please")
            answer = await crank.request("crank/abort", {})
            assert answer == {"stopReason": "aborted"}
            events = [e for e in crank.events if e.get("runId") == run_id]
            assert kinds(events)[-1] == "agent_settled"
            assert events[-2]["event"] == {"type": "agent_end", "stopReason": "aborted"}
            state = await crank.request("crank/state", {})
            assert state["running"] is False
            lines = session_lines(state)
            messages = (await crank.request("crank/messages", {}))["messages"]
            assert [line["message"] for line in lines[1:]] == messages
            assert messages[0]["content"] == "hang please"
            assert (await crank.request("crank/abort", {})) == {"stopReason": "idle"}
            again = await crank.request("crank/prompt", {"text": "now answer"})
            assert kinds(await crank.settled(again["runId"]))[-1] == "agent_settled"
            last = (await crank.request("crank/messages", {}))["messages"][-1]
            assert last["content"] == [{"type": "text", "text": "fine"}]


async def test_abort_at_any_moment_then_prompt_again(tmp_path: Path) -> None:
    """Abort as soon as the prompt is accepted, at agent_start, at message_start and
    once the model has the request; each time the next prompt gets its answer."""
    script = by_prompt(("answer", {"text": "fine"}), ("hang", {"text": "never", "hangAfter": 0}))
    moments = ["accepted", "agent_start", "message_start", "received"]
    with ModelServer(script) as model:
        async with running_server(tmp_path, [project(tmp_path)], options(model, tmp_path)) as crank:
            for moment in moments:
                answer = await crank.request("crank/prompt", {"text": f"hang at {moment}"})
                run_id = answer["runId"]
                if moment in ("agent_start", "message_start"):
                    await crank.wait_for(
                        lambda e, m=moment, r=run_id: (
                            e.get("runId") == r and e["event"]["type"] == m
                        )
                    )
                elif moment == "received":
                    await server_got(model, "hang at received")
                assert await crank.request("crank/abort", {}) == {"stopReason": "aborted"}, moment
                again = await crank.request("crank/prompt", {"text": "now answer"})
                assert kinds(await crank.settled(again["runId"]))[-1] == "agent_settled"
                last = (await crank.request("crank/messages", {}))["messages"][-1]
                assert last["content"] == [{"type": "text", "text": "fine"}], moment


async def test_a_busy_prompt_is_refused_with_1001(tmp_path: Path) -> None:
    with ModelServer({"replies": [{"text": "never", "hangAfter": 0}]}) as model:
        async with running_server(tmp_path, [project(tmp_path)], options(model, tmp_path)) as crank:
            await started(crank, "hang please")
            try:
                await crank.request("crank/prompt", {"text": "again"})
            except Exception as exc:
                assert "1001" in str(exc) or "already active" in str(exc)
            else:
                raise AssertionError("a second prompt was accepted while running")
            await crank.request("crank/abort", {})


async def test_abort_during_a_long_bash_command(tmp_path: Path) -> None:
    script = {"replies": [{"toolCalls": [{"name": "bash", "arguments": {"command": "sleep 30"}}]}]}
    with ModelServer(script) as model:
        opts = options(model, tmp_path, permissionMode="auto")
        async with running_server(tmp_path, [project(tmp_path)], opts) as crank:
            run_id = await started(crank, "run it")
            await crank.wait_for(lambda e: e["event"]["type"] == "tool_execution_start")
            assert await crank.request("crank/abort", {}) == {"stopReason": "aborted"}
            events = [e for e in crank.events if e.get("runId") == run_id]
            # killed, not waited for: a finished `sleep 30` would not be an aborted error
            assert tool_ends(events)[0]["result"]["isError"] is True
            assert tool_ends(events)[0]["result"]["content"].startswith("Aborted by the user")
            messages = (await crank.request("crank/messages", {}))["messages"]
            assert [m["role"] for m in messages] == ["user", "assistant", "toolResult"]


async def test_steer_follow_up_and_clear_queue(tmp_path: Path) -> None:
    script = {
        "replies": [
            {"toolCalls": [{"name": "bash", "arguments": {"command": "sleep 1"}}]},
            {"text": "steered"},
            {"text": "followed"},
        ]
    }
    with ModelServer(script) as model:
        opts = options(model, tmp_path, permissionMode="auto")
        async with running_server(tmp_path, [project(tmp_path)], opts) as crank:
            run_id = await started(crank, "start")
            await crank.wait_for(lambda e: e["event"]["type"] == "tool_execution_start")
            queued = await crank.request(
                "crank/prompt", {"text": "also this", "whileRunning": "steer"}
            )
            assert queued["queued"] == "steer"
            queues = await crank.request("crank/followUp", {"text": "then that"})
            assert queues == {"steering": ["also this"], "followUp": ["then that"]}
            queues = await crank.request("crank/steer", {"text": "drop me"})
            removed = await crank.request("crank/clearQueue", {})
            assert removed == {"steering": ["also this", "drop me"], "followUp": ["then that"]}
            await crank.request("crank/steer", {"text": "also this"})
            await crank.request("crank/followUp", {"text": "then that"})
            events = await crank.settled(run_id)
            assert "queue_update" in kinds(events)
            messages = (await crank.request("crank/messages", {}))["messages"]
            users = [m["content"] for m in messages if m["role"] == "user"]
            assert users == ["start", "also this", "then that"]
            texts = [
                m["content"][0]["text"]
                for m in messages
                if m["role"] == "assistant" and m["content"] and m["content"][0]["type"] == "text"
            ]
            assert texts == ["steered", "followed"]


async def test_permission_asked_allowed_rejected_and_remembered(tmp_path: Path) -> None:
    folder = project(tmp_path)
    script = {
        "replies": [
            {
                "toolCalls": [
                    {"id": "c1", "name": "write", "arguments": {"path": "a.txt", "content": "A\n"}}
                ]
            },
            {
                "toolCalls": [
                    {"id": "c2", "name": "write", "arguments": {"path": "b.txt", "content": "B\n"}}
                ]
            },
            {"toolCalls": [{"id": "c3", "name": "bash", "arguments": {"command": "ls"}}]},
            {"toolCalls": [{"id": "c4", "name": "bash", "arguments": {"command": "ls -a"}}]},
            {"text": "done"},
        ]
    }
    answers = iter(
        [
            {"decision": "allow"},
            {"decision": "reject", "reason": "not b please"},
            {"decision": "allowSession"},
        ]
    )
    with ModelServer(script) as model:
        async with running_server(tmp_path, [folder], options(model, tmp_path)) as crank:
            crank.answer_permission = lambda asked: next(answers)
            run_id = await started(crank, "go")
            events = await crank.settled(run_id)
            asked = crank.permission_requests
            assert [a["toolCallId"] for a in asked] == ["c1", "c2", "c3"]
            assert asked[0]["preview"]["kind"] == "diff" and asked[0]["preview"]["newText"] == "A\n"
            assert asked[2]["preview"] == {"kind": "command", "command": "ls"}
            assert asked[0]["runId"] == run_id and asked[0]["workspace"] == folder.as_uri()
            assert read_text(folder / "a.txt") == "A\n"
            assert not (folder / "b.txt").exists()
            results = {e["toolCallId"]: e["result"] for e in tool_ends(events)}
            assert results["c2"]["isError"] and "not b please" in results["c2"]["content"]
            assert not results["c4"]["isError"]  # "ls -a" was covered by the "ls" rule


async def test_always_allow_is_persisted_across_restarts(tmp_path: Path) -> None:
    folder = project(tmp_path)
    call = {"toolCalls": [{"name": "bash", "arguments": {"command": "echo hi"}}]}
    with ModelServer({"replies": [call, {"text": "ok"}, call, {"text": "ok"}]}) as model:
        async with running_server(tmp_path, [folder], options(model, tmp_path)) as crank:
            crank.answer_permission = lambda asked: {"decision": "allowAlways"}
            await crank.settled(await started(crank, "one"))
            assert len(crank.permission_requests) == 1
        async with running_server(tmp_path, [folder], options(model, tmp_path)) as crank:
            await crank.settled(await started(crank, "two"))
            assert crank.permission_requests == []
            results = tool_ends(crank.events)
            assert "hi" in results[0]["result"]["content"]


async def test_show_message_request_without_the_capability(tmp_path: Path) -> None:
    folder = project(tmp_path)
    script = {
        "replies": [
            {"toolCalls": [{"name": "bash", "arguments": {"command": "echo x"}}]},
            {"text": "ok"},
        ]
    }
    with ModelServer(script) as model:
        async with running_server(
            tmp_path, [folder], options(model, tmp_path), permission_requests=False
        ) as crank:
            asked: list[Any] = []

            @crank.client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
            def on_request(params: types.ShowMessageRequestParams) -> types.MessageActionItem:
                asked.append(params)
                return types.MessageActionItem(title="Reject")

            events = await crank.settled(await started(crank, "go"))
            assert "echo x" in asked[0].message
            assert [a.title for a in asked[0].actions] == [
                "Allow",
                "Allow for this session",
                "Always allow",
                "Reject",
            ]
            assert "declined" in tool_ends(events)[0]["result"]["content"]


def open_document(crank: Crank, path: Path, text: str) -> None:
    crank.client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=path.as_uri(), language_id="python", version=1, text=text
            )
        )
    )


async def test_edits_to_an_open_document_go_through_apply_edit(tmp_path: Path) -> None:
    folder = project(tmp_path)
    target = folder / "m.py"
    target.write_text("x = 2\n")
    edit = {"path": "m.py", "oldText": "x = 2", "newText": "x = 3"}
    script = {
        "replies": [
            {"toolCalls": [{"id": "r", "name": "read", "arguments": {"path": "m.py"}}]},
            {"toolCalls": [{"id": "e", "name": "edit", "arguments": edit}]},
            {"text": "done"},
            {
                "toolCalls": [
                    {
                        "id": "e2",
                        "name": "edit",
                        "arguments": {"path": "m.py", "oldText": "x = 3", "newText": "x = 4"},
                    }
                ]
            },
            {"text": "refused"},
        ]
    }
    with ModelServer(script) as model:
        opts = options(model, tmp_path, permissionMode="autoEdit")
        async with running_server(tmp_path, [folder], opts) as crank:
            crank.open(target, "x = 2\n")
            events = await crank.settled(await started(crank, "edit"))
            results = {e["toolCallId"]: e["result"] for e in tool_ends(events)}
            assert "x = 2" in results["r"]["content"]
            assert not results["e"]["isError"], results["e"]
            assert len(crank.edits) == 1
            assert crank.buffer(target) == "x = 3\n"  # the editor shows it
            assert read_text(target) == "x = 3\n"  # and commands see it (no save support)

            crank.apply_edits = False
            events = await crank.settled(await started(crank, "again"))
            result = tool_ends(events)[0]["result"]
            assert result["isError"] and "the user said no" in result["content"]


async def test_two_workspaces_run_at_once(tmp_path: Path) -> None:
    one, two = project(tmp_path, "one"), project(tmp_path, "two")
    script = {
        "rules": [
            {
                "lastUserContains": "first",
                "reply": {"text": "from one", "delayMs": 60, "chunks": 4},
            },
            {
                "lastUserContains": "second",
                "reply": {"text": "from two", "delayMs": 60, "chunks": 4},
            },
        ]
    }
    with ModelServer(script) as model:
        async with running_server(tmp_path, [one, two], options(model, tmp_path)) as crank:
            try:
                await crank.request("crank/state", {})
            except Exception as exc:
                assert "workspace" in str(exc)
            a = await crank.request("crank/prompt", {"workspace": one.as_uri(), "text": "first"})
            b = await crank.request("crank/prompt", {"workspace": two.as_uri(), "text": "second"})
            state_one = await crank.request("crank/state", {"workspace": one.as_uri()})
            state_two = await crank.request("crank/state", {"workspace": two.as_uri()})
            assert state_one["running"] and state_two["running"]
            events_a = await crank.settled(a["runId"])
            await crank.settled(b["runId"])
            assert {e["workspace"] for e in events_a if e["sessionId"] == a["sessionId"]} == {
                one.as_uri()
            }
            replies = {
                e["workspace"]: e["event"]["message"]["content"][0]["text"]
                for e in crank.events
                if e["event"]["type"] == "message_end"
                and e["event"]["message"]["role"] == "assistant"
            }
            assert replies == {one.as_uri(): "from one", two.as_uri(): "from two"}

            three = project(tmp_path, "three")
            crank.client.workspace_did_change_workspace_folders(
                types.DidChangeWorkspaceFoldersParams(
                    event=types.WorkspaceFoldersChangeEvent(
                        added=[types.WorkspaceFolder(uri=three.as_uri(), name="three")],
                        removed=[types.WorkspaceFolder(uri=two.as_uri(), name="two")],
                    )
                )
            )
            state: dict[str, Any] | None = None
            for _ in range(500):  # until the server has taken the change (an answer)
                try:
                    state = await crank.request("crank/state", {"workspace": three.as_uri()})
                    break
                except Exception:
                    await asyncio.sleep(0.01)
            assert state is not None and state["running"] is False
            try:
                await crank.request("crank/state", {"workspace": two.as_uri()})
            except Exception as exc:
                assert "no workspace" in str(exc)
            else:
                raise AssertionError("a removed workspace still answered")


async def test_fix_this_file_through_a_code_action(tmp_path: Path) -> None:
    folder = project(tmp_path)
    target = folder / "bad.py"
    target.write_text("print(undefined_name)\n")
    fix = {"path": "bad.py", "oldText": "undefined_name", "newText": "'ok'"}
    script = {"replies": [{"toolCalls": [{"name": "edit", "arguments": fix}]}, {"text": "fixed"}]}
    with ModelServer(script) as model:
        opts = options(model, tmp_path, permissionMode="autoEdit")
        async with running_server(tmp_path, [folder], opts) as crank:
            open_document(crank, target, "print(undefined_name)\n")
            diagnostic = types.Diagnostic(
                range=types.Range(
                    start=types.Position(line=0, character=6),
                    end=types.Position(line=0, character=20),
                ),
                message="undefined name 'undefined_name'",
                severity=types.DiagnosticSeverity.Error,
                source="pyflakes",
            )
            params = types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=target.as_uri()),
                range=diagnostic.range,
                context=types.CodeActionContext(diagnostics=[diagnostic]),
            )
            actions = await untyped_request(crank, types.TEXT_DOCUMENT_CODE_ACTION, params)
            assert [a["title"] for a in actions] == ["Fix with Crank", "Crank: fix this file"]
            assert [a["kind"] for a in actions] == ["quickfix", "source"]
            command = actions[0]["command"]
            assert command["command"] == "crank.fixFile"
            answer = await untyped_request(
                crank,
                types.WORKSPACE_EXECUTE_COMMAND,
                types.ExecuteCommandParams(
                    command=command["command"], arguments=command["arguments"]
                ),
            )
            await crank.settled(answer["runId"])
            prompt = json.dumps(model.requests[0]["body"]["messages"][-1]["content"])
            assert (
                "bad.py" in prompt
                and "undefined name 'undefined_name'" in prompt
                and "line 1, column 7" in prompt
            )
            assert len(crank.edits) == 1


async def untyped_request(crank: Crank, method: str, params: Any) -> Any:
    """A request whose answer is left as plain data: pygls's client would structure a
    CodeAction as a Command (both have title and command), which is not what was sent."""
    protocol = crank.client.protocol
    msg_id = f"test-{method}"
    future = protocol.send_request(method, params, msg_id=msg_id)
    pygls_adapter.expect_plain_result(protocol, msg_id)
    return plain(await asyncio.wrap_future(future))


async def test_fix_this_file_is_not_in_every_menu(tmp_path: Path) -> None:
    """An unfiltered request (Neovim's code_action()) on a line with nothing to fix gets
    no Crank action; asked for source actions (VS Code's Source Action menu), it does."""
    folder = project(tmp_path)
    target = folder / "clean.py"
    target.write_text("x = 1\n")
    with ModelServer({"replies": []}) as model:
        async with running_server(tmp_path, [folder], options(model, tmp_path)) as crank:
            open_document(crank, target, "x = 1\n")
            where = types.Range(start=types.Position(0, 0), end=types.Position(0, 0))

            async def titles(only: list[str] | None) -> list[str]:
                params = types.CodeActionParams(
                    text_document=types.TextDocumentIdentifier(uri=target.as_uri()),
                    range=where,
                    context=types.CodeActionContext(diagnostics=[], only=only),
                )
                actions = await untyped_request(crank, types.TEXT_DOCUMENT_CODE_ACTION, params)
                return [a["title"] for a in actions or []]

            assert await titles(None) == []
            assert await titles([types.CodeActionKind.Source]) == ["Crank: fix this file"]
            assert await titles([types.CodeActionKind.QuickFix]) == []


async def test_kill_mid_run_then_open_and_continue(tmp_path: Path) -> None:
    folder = project(tmp_path)
    script = by_prompt(
        ("continue", {"text": "resumed fine"}), ("remember", {"text": "partial", "hangAfter": 2})
    )
    with ModelServer(script) as model:
        async with running_server(tmp_path, [folder], options(model, tmp_path)) as crank:
            first = await crank.request("crank/prompt", {"text": "remember me"})
            await crank.wait_for(lambda e: e["event"]["type"] == "message_end")
            server = crank.client._server
            assert server is not None
            server.kill()
            await server.wait()
            crank.client.capabilities = None  # nothing to shut down
        async with running_server(tmp_path, [folder], options(model, tmp_path)) as crank:
            sessions = (await crank.request("crank/sessions", {}))["sessions"]
            assert [s["sessionId"] for s in sessions] == [first["sessionId"]]
            assert (
                await crank.request("crank/openSession", {"sessionId": first["sessionId"]})
            ) == {"sessionId": first["sessionId"]}
            messages = (await crank.request("crank/messages", {}))["messages"]
            assert messages[0]["content"] == "remember me"
            again = await crank.request("crank/prompt", {"text": "continue"})
            assert again["sessionId"] == first["sessionId"]
            await crank.settled(again["runId"])
            tree = await crank.request("crank/tree", {})
            assert [e.get("role") for e in tree["entries"]] == ["user", "user", "assistant"]
            last = (await crank.request("crank/messages", {}))["messages"][-1]
            assert last["content"] == [{"type": "text", "text": "resumed fine"}]
