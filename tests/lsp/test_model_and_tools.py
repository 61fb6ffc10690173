"""Models, the system prompt, the readOnly mode and bash streaming, over the wire."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.support.model_server import ModelServer

from .helpers import running_server
from .test_runs import kinds, options, project, session_lines, started, tool_ends
from .test_sessions import ask

MUTATING = {"write", "edit", "bash"}


def tool_names(prompt: dict[str, Any]) -> set[str]:
    return {s["name"] for s in prompt["sources"] if s["kind"] == "tool"}


def offered_tools(request: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in request["body"].get("tools", [])}


async def test_models_set_model_and_system_prompt(tmp_path: Path) -> None:
    with ModelServer({"replies": [{"text": "one"}, {"text": "two"}]}) as model:
        async with running_server(tmp_path, [project(tmp_path)], options(model, tmp_path)) as crank:
            models = (await crank.request("crank/models", {}))["models"]
            assert models[0]["api"] == "openai" and models[0]["id"] == "test"
            assert all(isinstance(m["contextWindow"], int) for m in models)
            assert len(models) > 1  # the catalog's models follow the configured one

            prompt = await crank.request("crank/systemPrompt", {})
            assert prompt["hash"] == hashlib.sha256(prompt["text"].encode()).hexdigest()
            assert tool_names(prompt) >= MUTATING

            await ask(crank, "hello")
            assert model.requests[-1]["body"]["model"] == "test"
            assert model.requests[-1]["body"]["messages"][0]["content"] == prompt["text"]

            answer = await crank.request("crank/setModel", {"api": "openai", "id": "other-model"})
            assert answer == {"model": {"api": "openai", "id": "other-model"}}
            state = await crank.request("crank/state", {})
            assert state["model"] == {
                "api": "openai",
                "id": "other-model",
                "contextWindow": 8192,
                "baseUrl": f"{model.url}/v1",
            }
            assert session_lines(state)[-1]["type"] == "modelChange"
            await ask(crank, "again")
            assert model.requests[-1]["body"]["model"] == "other-model"

            with pytest.raises(JsonRpcException) as raised:
                await crank.request("crank/setModel", {"api": "openai"})
            assert raised.value.code == -32602 and "id" in str(raised.value)


async def test_models_lists_what_the_server_serves_with_its_window(tmp_path: Path) -> None:
    """A vLLM-shaped ``/v1/models`` (the served ids, ``max_model_len``): listed first as
    ``source: "server"``, and the window is the server's in crank/state and for the run."""
    with ModelServer({"replies": [{"text": "one"}]}) as model:
        model.routes["/v1/models"] = {
            "data": [{"id": "test", "max_model_len": 32768}, {"id": "coder", "max_model_len": 4096}]
        }
        async with running_server(tmp_path, [project(tmp_path)], options(model, tmp_path)) as crank:
            models = (await crank.request("crank/models", {}))["models"]
            served = [(m["id"], m["contextWindow"]) for m in models if m["source"] == "server"]
            assert served == [("test", 32768), ("coder", 4096)]
            assert models[0]["id"] == "test" and models[2]["source"] == "catalog"
            state = await crank.request("crank/state", {})
            assert state["usage"]["contextWindow"] == 32768
            await ask(crank, "hello")
            assert model.requests[-1]["body"]["model"] == "test"


async def test_read_only_mode_offers_and_names_no_mutating_tool(tmp_path: Path) -> None:
    folder = project(tmp_path)
    write = {"name": "write", "arguments": {"path": "new.txt", "content": "x"}}
    replies = [{"toolCalls": [write]}, {"text": "could not"}]
    with ModelServer({"replies": replies}) as model:
        async with running_server(tmp_path, [folder], options(model, tmp_path)) as crank:
            assert await crank.request("crank/setPermissionMode", {"mode": "readOnly"}) == {
                "mode": "readOnly"
            }
            changed = await crank.wait_for(lambda e: e["event"]["type"] == "system_prompt_changed")
            prompt = await crank.request("crank/systemPrompt", {})
            assert changed["event"]["hash"] == prompt["hash"]
            assert tool_names(prompt) and not (tool_names(prompt) & MUTATING)
            assert (await crank.request("crank/state", {}))["permissionMode"] == "readOnly"

            events = await crank.settled(await started(crank, "write a file"))
            assert offered_tools(model.requests[0]) == tool_names(prompt)
            assert model.requests[0]["body"]["messages"][0]["content"] == prompt["text"]
            (result,) = tool_ends(events)
            assert result["result"]["isError"] is True
            assert not (folder / "new.txt").exists()
            assert crank.permission_requests == []

            await crank.request("crank/setPermissionMode", {"mode": "ask"})
            back = await crank.request("crank/systemPrompt", {})
            assert tool_names(back) >= MUTATING


async def test_bash_output_streams_before_the_command_ends(tmp_path: Path) -> None:
    command = "echo first-line; sleep 1; echo second-line"
    script = {
        "replies": [
            {"toolCalls": [{"id": "b", "name": "bash", "arguments": {"command": command}}]},
            {"text": "ran"},
        ]
    }
    with ModelServer(script) as model:
        opts = options(model, tmp_path, permissionMode="auto")
        async with running_server(tmp_path, [project(tmp_path)], opts) as crank:
            run_id = await started(crank, "run it")
            update = await crank.wait_for(
                lambda e: (
                    e["event"]["type"] == "tool_execution_update"
                    and "first-line" in e["event"]["output"]
                )
            )
            assert update["event"]["toolCallId"] == "b"
            assert "tool_execution_end" not in kinds(crank.events)  # still running
            assert "second-line" not in update["event"]["output"]
            events = await crank.settled(run_id)
            streamed = "".join(
                e["event"]["output"]
                for e in events
                if e["event"]["type"] == "tool_execution_update"
            )
            assert "first-line" in streamed and "second-line" in streamed
            (end,) = tool_ends(events)
            assert "second-line" in end["result"]["content"]


async def test_a_path_outside_the_workspace_is_asked_as_outside(tmp_path: Path) -> None:
    folder = project(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("the secret\n")
    (tmp_path / "other.txt").write_text("other\n")
    read = {"name": "read", "arguments": {"path": "../secret.txt"}}
    other = {"name": "read", "arguments": {"path": "../other.txt"}}
    replies = [
        {"toolCalls": [{"id": "r1", **read}]},
        {"toolCalls": [{"id": "r2", **read}]},
        {"toolCalls": [{"id": "r3", **other}]},
        {"text": "done"},
    ]
    answers = iter([{"decision": "allowSession"}, {"decision": "reject", "reason": "private"}])
    with ModelServer({"replies": replies}) as model:
        async with running_server(tmp_path, [folder], options(model, tmp_path)) as crank:
            crank.answer_permission = lambda asked: next(answers)
            events = await crank.settled(await started(crank, "peek"))
            asked = crank.permission_requests
            assert [a["toolName"] for a in asked] == ["outside", "outside"]
            assert asked[0]["preview"] == {"kind": "path", "path": str(secret.resolve())}
            assert asked[0]["toolCallId"] == "r1" and asked[0]["arguments"] == read["arguments"]
            assert asked[1]["toolCallId"] == "r3"
            results = {e["toolCallId"]: e["result"] for e in tool_ends(events)}
            assert "the secret" in results["r1"]["content"]
            assert "the secret" in results["r2"]["content"]  # remembered for the session
            assert results["r3"]["isError"] and "refused" in results["r3"]["content"]
            assert "The user declined: private" in results["r3"]["content"]
