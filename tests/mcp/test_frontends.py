"""``mcp__everything__echo`` through each frontend, the model being the loopback model
server scripted to call it: ``crank serve`` (the LSP server, ``crank.mcpServers`` in
``initializationOptions``), ``crank run`` (the user config file's ``mcpServers``) and
``crank acp`` (the ACP SDK client, ``mcpServers`` in ``session/new``). After each
shutdown the server's process is gone (checked by pid)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import acp
from acp import schema

from tests.acp.helpers import RecordingClient, crank_acp
from tests.acp.test_acp_wire import request, run_agent
from tests.cli.test_run import loopback_env
from tests.lsp.helpers import running_server
from tests.lsp.test_runs import options, project, tool_ends
from tests.support.model_server import ModelServer

from .servers import alive, everything, odd

GUARD_S = 120
"""Not a timed assertion: how long a broken test may hang (the machine is loaded)."""
ECHO = {"name": "mcp__everything__echo", "arguments": {"message": "plover"}}


def echo_script() -> dict[str, Any]:
    """Call the tool; once its result is in the request, say what it returned."""
    return {
        "rules": [{"lastMessageContains": "Echo: plover", "reply": {"text": "It said plover."}}],
        "replies": [{"toolCalls": [ECHO]}],
    }


def offered(model: ModelServer) -> list[str]:
    return [tool["function"]["name"] for tool in model.requests[0]["body"].get("tools", [])]


async def test_crank_serve_offers_asks_and_calls_the_echo_tool(tmp_path: Path) -> None:
    with ModelServer(echo_script()) as model:
        init = options(model, tmp_path, mcpServers={"everything": everything()})
        async with running_server(tmp_path, [project(tmp_path)], init) as crank:
            await crank.wait_for(
                lambda e: (
                    e["event"]["type"] == "mcp_changed"
                    and e["event"]["servers"][0]["state"] == "ready"
                ),
                within=GUARD_S,
            )
            state = await crank.request("crank/state", {})
            [server] = state["mcp"]
            assert server["name"] == "everything" and server["source"] == "editor"
            assert "mcp__everything__echo" in server["tools"]
            answer = await crank.request("crank/prompt", {"text": "use the echo tool"})
            await crank.settled(answer["runId"], within=GUARD_S)
            [end] = tool_ends(crank.events)
            assert end["result"]["content"] == "Echo: plover" and not end["result"]["isError"]
            [question] = crank.permission_requests
            assert question["toolName"] == "mcp__everything__echo"
            assert question["preview"]["command"].startswith("mcp__everything__echo {")
            names = offered(model)
            mcp_names = [n for n in names if n.startswith("mcp__")]
            assert mcp_names == sorted(mcp_names) and names[-len(mcp_names) :] == mcp_names
            pid = server["pid"]
        assert not alive(pid)


def test_crank_run_calls_the_echo_tool_from_the_user_config(tmp_path: Path) -> None:
    folder = project(tmp_path)
    config = tmp_path / "config"
    (config / "crank").mkdir(parents=True)
    servers = {"mcpServers": {"everything": everything()}}
    (config / "crank" / "config.json").write_text(json.dumps(servers))
    with ModelServer(echo_script()) as model:
        env = loopback_env(model)
        env["XDG_CONFIG_HOME"] = str(config)
        done = subprocess.run(
            [sys.executable, "-m", "crank.cli", "run", "--json", "--session-dir",
             str(tmp_path / "sessions"), "use the echo tool"],
            cwd=folder, env=env, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    events = [json.loads(line)["event"] for line in done.stdout.splitlines()]
    [end] = [e for e in events if e["type"] == "tool_execution_end"]
    assert end["result"]["content"] == "Echo: plover"
    assert "It said plover." in done.stdout


async def test_crank_acp_connects_the_session_new_mcp_servers(tmp_path: Path) -> None:
    folder = project(tmp_path)
    config = tmp_path / "home" / ".config" / "crank"  # crank_acp's XDG_CONFIG_HOME
    config.mkdir(parents=True)
    # a loaded machine may take more than the default 5 s to start node: wait for it
    (config / "config.json").write_text(json.dumps({"mcpStartupWaitMs": GUARD_S * 1000}))
    raw = everything()
    server = schema.McpServerStdio(
        name="everything", command=raw["command"], args=raw["args"], env=[]
    )
    client = RecordingClient(answers=["allow"])
    answers: list[Any] = []
    with ModelServer(echo_script()) as model:
        async with crank_acp(model, tmp_path, client, answers=answers) as conn:
            caps = answers[0].agent_capabilities.mcp_capabilities
            assert caps.http is True
            session = await conn.new_session(cwd=str(folder), mcp_servers=[server])
            answer = await conn.prompt(
                session_id=session.session_id, prompt=[acp.text_block("use the echo tool")]
            )
            assert answer.stop_reason == "end_turn"
            assert client.text().endswith("It said plover.")
            assert "mcp__everything__echo" in offered(model)
            sent = json.dumps(model.requests[-1]["body"]["messages"])
            assert "Echo: plover" in sent


async def test_crank_mcp_server_disables_and_restarts_a_server(tmp_path: Path) -> None:
    with ModelServer({"replies": [{"text": "hi"}]}) as model:
        init = options(model, tmp_path, mcpServers={"everything": everything()})
        async with running_server(tmp_path, [project(tmp_path)], init) as crank:

            def ready(not_pid: int | None = None) -> Any:
                return lambda e: (
                    e["event"]["type"] == "mcp_changed"
                    and [(s["state"], s.get("pid") != not_pid) for s in e["event"]["servers"]]
                    == [("ready", True)]
                )

            await crank.wait_for(ready(), within=GUARD_S)
            first = (await crank.request("crank/state", {}))["mcp"][0]["pid"]
            answer = await crank.request(
                "crank/mcpServer", {"name": "everything", "action": "disable"}
            )
            assert [(s["state"], s["tools"]) for s in answer["servers"]] == [("disabled", [])]
            assert not alive(first)
            await crank.request("crank/mcpServer", {"name": "everything", "action": "enable"})
            await crank.wait_for(ready(not_pid=first), within=GUARD_S)
            again = (await crank.request("crank/state", {}))["mcp"][0]
            assert again["pid"] != first and "mcp__everything__echo" in again["tools"]


async def test_mcp_prompts_are_slash_commands(tmp_path: Path) -> None:
    with ModelServer({"replies": [{"text": "sunny"}]}) as model:
        init = options(model, tmp_path, mcpServers={"everything": everything()})
        async with running_server(tmp_path, [project(tmp_path)], init) as crank:
            await crank.wait_for(
                lambda e: (
                    e["event"]["type"] == "mcp_changed"
                    and e["event"]["servers"][0]["state"] == "ready"
                ),
                within=GUARD_S,
            )
            commands = (await crank.request("crank/commands", {}))["commands"]
            mine = {c["name"]: c for c in commands if c["kind"] == "mcp"}
            assert "mcp__everything__args-prompt" in mine
            assert mine["mcp__everything__args-prompt"]["argumentHint"] == "city=... state=..."
            answer = await crank.request(
                "crank/prompt", {"text": "/mcp__everything__args-prompt city=Lyon"}
            )
            await crank.settled(answer["runId"], within=GUARD_S)
            sent = json.dumps(model.requests[-1]["body"]["messages"][-1])
            assert "What's weather in Lyon?" in sent
            messages = (await crank.request("crank/messages", {}))["messages"]
            assert messages[0]["typed"] == "/mcp__everything__args-prompt city=Lyon"


async def test_list_changed_reaches_the_next_run_never_the_current_one(tmp_path: Path) -> None:
    script = {
        "rules": [{"lastUserContains": "second", "reply": {"text": "two"}}],
        "replies": [
            {"toolCalls": [{"name": "mcp__odd__grow", "arguments": {}}]},
            {"text": "grown"},
        ],
    }
    with ModelServer(script) as model:
        init = options(model, tmp_path, mcpServers={"odd": odd("fastmcp")})
        async with running_server(tmp_path, [project(tmp_path)], init) as crank:
            await crank.wait_for(
                lambda e: (
                    e["event"]["type"] == "mcp_changed"
                    and e["event"]["servers"][0]["state"] == "ready"
                ),
                within=GUARD_S,
            )
            first = await crank.request("crank/prompt", {"text": "first"})
            await crank.wait_for(
                lambda e: (
                    e["event"]["type"] == "mcp_changed"
                    and "mcp__odd__add2" in e["event"]["servers"][0]["tools"]
                ),
                within=GUARD_S,
            )
            await crank.settled(first["runId"], within=GUARD_S)
            second = await crank.request("crank/prompt", {"text": "second"})
            await crank.settled(second["runId"], within=GUARD_S)
    names = [[t["function"]["name"] for t in r["body"]["tools"]] for r in model.requests]
    assert len(names) == 3
    assert "mcp__odd__add2" not in names[0] and "mcp__odd__add2" not in names[1]  # run 1
    assert "mcp__odd__add2" in names[2]  # the next run


def test_a_codecompanion_style_session_new_with_mcp_servers(tmp_path: Path) -> None:
    """Raw ACP lines as codecompanion.nvim sends them (``mcpServers`` with ``env: []``):
    the session opens (it was -32602 before); a malformed entry is -32602 naming it."""
    raw = everything()
    good = {"name": "everything", "command": raw["command"], "args": raw["args"], "env": []}
    bad = {"name": "broken", "command": 5, "args": [], "env": []}
    lines = [
        request(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}}),
        request(2, "session/new", {"cwd": str(tmp_path), "mcpServers": [good]}),
        request(3, "session/new", {"cwd": str(tmp_path), "mcpServers": [bad]}),
    ]
    with ModelServer({"replies": []}) as model:
        out = [json.loads(line) for line in run_agent(lines, model, tmp_path)]
    by_id = {m["id"]: m for m in out if "id" in m and "method" not in m}
    assert by_id[1]["result"]["agentCapabilities"]["mcpCapabilities"]["http"] is True
    assert "sessionId" in by_id[2]["result"]
    assert by_id[3]["error"]["code"] == -32602
    assert "broken" in by_id[3]["error"]["message"] and "command" in by_id[3]["error"]["message"]


def running_in(folder: Path) -> list[int]:
    """The pids of live processes whose working directory is ``folder``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if Path(os.readlink(entry / "cwd")) == folder and alive(int(entry.name)):
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


async def test_mcp_start_first_use_starts_nothing_until_the_first_prompt(tmp_path: Path) -> None:
    """``mcpStart: firstUse``: after ``initialize`` the server is listed ``idle`` and no
    process of it runs (found by its own working directory); the first prompt starts it
    and waits for it, so that prompt is already offered and can call its tool."""
    home = tmp_path / "mcp-home"
    home.mkdir()
    with ModelServer(echo_script()) as model:
        init = options(
            model,
            tmp_path,
            mcpServers={"everything": {**everything(), "cwd": str(home)}},
            mcpStart="firstUse",
            mcpStartupWaitMs=GUARD_S * 1000,
        )
        async with running_server(tmp_path, [project(tmp_path)], init) as crank:
            state = await crank.request("crank/state", {})
            [server] = state["mcp"]
            assert (server["state"], server.get("pid"), server["tools"]) == ("idle", None, [])
            assert running_in(home) == []
            answer = await crank.request("crank/prompt", {"text": "use the echo tool"})
            await crank.settled(answer["runId"], within=GUARD_S)
            assert "mcp__everything__echo" in offered(model)
            [end] = tool_ends(crank.events)
            assert end["result"]["content"] == "Echo: plover" and not end["result"]["isError"]
            [server] = (await crank.request("crank/state", {}))["mcp"]
            assert server["state"] == "ready" and server["pid"] in running_in(home)
        assert running_in(home) == []
