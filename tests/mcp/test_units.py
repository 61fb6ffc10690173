"""Configuration, names, and the tools as the workspace offers them (approval, the
read-only hint, the output budget), against the FastMCP odd server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from crank.agent.model import AbortSignal
from crank.agent.tools import run_tool
from crank.mcp.config import choose, parse_acp_servers, parse_servers
from crank.mcp.names import MAX_NAME, qualified, unique
from crank.tools import ApprovalRequest, Decision
from crank.workspace.mcp import WorkspaceMcp
from crank.workspace.settings import merge_layers

from .servers import odd


def test_the_formats_users_write_are_read_and_bad_entries_named() -> None:
    raw = {
        "local": {"command": "npx", "args": ["-y", "pkg"], "env": {"K": "v"}},
        "remote": {"type": "http", "url": "https://x.example/mcp", "headers": {"A": "b"}},
        "guessed": {"url": "http://127.0.0.1:1/mcp"},
        "typo": {"command": "x", "argz": []},
        "nourl": {"type": "http"},
        "badenv": {"command": "x", "env": {"K": 1}},
    }
    servers, problems = parse_servers({"mcpServers": raw}, "user", "config.json")
    assert [(s.name, s.transport) for s in servers] == [
        ("local", "stdio"),
        ("remote", "http"),
        ("guessed", "http"),
    ]
    assert servers[0].describe() == "K=v npx -y pkg"
    assert "secret" not in repr(servers[1]) and servers[1].describe().endswith("(headers: A)")
    assert len(problems) == 3
    assert any("argz is not a setting" in p for p in problems)
    assert any("url must be an http" in p for p in problems)
    assert any("env must be an object of strings" in p for p in problems)


def test_acp_servers_and_the_more_specific_source_wins() -> None:
    acp, problems = parse_acp_servers(
        [
            {"name": "a", "command": "x", "args": [], "env": [{"name": "K", "value": "v"}]},
            {"type": "http", "name": "b", "url": "http://h/mcp", "headers": []},
            {"name": "c", "command": "x", "env": [{"name": "K"}]},
        ]
    )
    assert [(s.name, dict(s.env)) for s in acp] == [("a", {"K": "v"}), ("b", {})]
    assert problems == ["mcpServers[2].env must be a list of {name, value} strings"]
    user, _ = parse_servers({"a": {"command": "y"}}, "user", "f")
    chosen, notes = choose([*user, *acp])
    assert [(s.name, s.source) for s in chosen] == [("a", "acp"), ("b", "acp")]
    assert notes == [
        "MCP server 'a' is configured in both the user and the acp settings: the acp one is used"
    ]


def test_names_are_sanitised_bounded_and_unique() -> None:
    assert qualified("my server", "odd.name/x") == "mcp__my_server__odd_name_x"
    long = qualified("s", "t" * 100)
    assert len(long) == MAX_NAME and long != qualified("s", "t" * 99)
    assert unique(["a", "a", "b"]) == ["a", "a_2", "b"]


def test_a_folder_layer_cannot_add_servers_unless_trusted(tmp_path: Path) -> None:
    section = {"mcpServers": {"x": {"command": "evil"}}}
    settings = merge_layers(
        [("folder", section)], config_file=tmp_path / "none.json", folder_scoped={"folder"}
    )
    assert settings.mcp_servers == ()
    assert any("mcpServers" in p for p in settings.problems)
    editor = merge_layers([("init", section)], config_file=tmp_path / "none.json")
    assert [(s.name, s.source) for s in editor.mcp_servers] == [("x", "editor")]


@pytest.fixture
async def odd_mcp(tmp_path: Path) -> AsyncIterator[WorkspaceMcp]:
    lines: list[str] = []
    mcp = WorkspaceMcp(
        tmp_path, tmp_path.as_uri(), lines.append, None, lambda: ("s", None), lambda: None
    )
    servers, _ = parse_servers({"odd": odd("fastmcp")}, "user", "test")
    mcp.configure(servers, trusted=False, trust_read_only=True)
    await mcp.settle(120)
    try:
        yield mcp
    finally:
        await mcp.close()


async def test_calls_ask_unless_a_trusted_read_only_hint_and_output_is_bounded(
    odd_mcp: WorkspaceMcp,
) -> None:
    asked: list[ApprovalRequest] = []

    async def approve(request: ApprovalRequest) -> Decision:
        asked.append(request)
        return Decision.reject("not today") if "crash" in request["toolName"] else Decision.allow()

    tools = odd_mcp.tools(approve)
    by_name = {tool.name: tool for tool in tools}
    assert not by_name["mcp__odd__add"].mutates and by_name["mcp__odd__big"].mutates

    async def call(name: str, arguments: dict[str, Any]) -> Any:
        block = {"type": "toolCall", "id": f"c-{name}", "name": name, "arguments": arguments}
        result, _details = await run_tool(tools, block, AbortSignal(), lambda _: None)  # type: ignore[arg-type]
        return result

    added = await call("mcp__odd__add", {"a": 2, "b": 3})
    assert added["content"] == "5" and asked == []  # the trusted hint: no question
    big = await call("mcp__odd__big", {})
    text = big["content"]
    assert len(text.encode()) < 60_000 and "[Output truncated" in text
    assert [r["toolName"] for r in asked] == ["mcp__odd__big"]
    refused = await call("mcp__odd__crash", {})
    assert refused["isError"] and "not today" in refused["content"]
    assert odd_mcp.servers.connections["odd"].state == "ready"  # never called


def test_crank_run_waits_for_starting_servers_longer_than_an_editor_unless_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A script wants the tools it was configured with: a server that takes more than
    an editor's 5 s to start (node on a loaded machine) is still waited for."""
    import argparse
    import json

    from crank.cli.run import run_settings
    from crank.workspace.mcp import RUN_WAIT_S

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    args = argparse.Namespace(
        trust=False, read_only=False, session_dir=None, script=None, model=None,
        no_sandbox=False, network=False,
    )  # fmt: skip
    assert run_settings(args).mcp_startup_wait_ms == RUN_WAIT_S * 1000
    assert merge_layers([]).mcp_startup_wait_ms == 5000  # an editor's first answer
    (tmp_path / "crank").mkdir()
    (tmp_path / "crank" / "config.json").write_text(json.dumps({"mcpStartupWaitMs": 1200}))
    assert run_settings(args).mcp_startup_wait_ms == 1200
