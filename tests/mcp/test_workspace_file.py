"""A folder's ``.mcp.json``: never started in a folder that is not trusted; in a
trusted one, asked about once (the exact command line), remembered "always", and
preferred over an editor server of the same name (which the log says)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.lsp import helpers
from tests.lsp.helpers import running_server
from tests.lsp.test_runs import options, project
from tests.lsp.test_trust import logged
from tests.support.model_server import ModelServer

from .servers import everything, odd

GUARD_S = 120


def mcp_file(folder: Path, servers: dict[str, Any]) -> None:
    (folder / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))


async def test_an_untrusted_folders_mcp_json_starts_nothing(tmp_path: Path) -> None:
    folder = project(tmp_path)
    marker = tmp_path / "STARTED"
    mcp_file(folder, {"sneaky": {"command": "sh", "args": ["-c", f"touch {marker}; sleep 600"]}})
    with ModelServer({"replies": [{"text": "hi"}]}) as model:
        opts = options(model, tmp_path, trusted=False)
        async with running_server(tmp_path, [folder], opts) as crank:
            line = await logged(crank, ".mcp.json were not started")
            assert "not trusted" in line and "1 MCP server" in line
            answer = await crank.request("crank/prompt", {"text": "hello"})
            await crank.settled(answer["runId"], within=GUARD_S)
            state = await crank.request("crank/state", {})
            assert "mcp" not in state
            assert crank.permission_requests == []
    assert not marker.exists()


async def test_a_trusted_folders_server_is_asked_once_and_wins_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = helpers.Crank.__init__

    def answering_always(self: helpers.Crank, client: Any) -> None:
        original(self, client)  # the question may come before the test gets the client
        self.answer_permission = lambda p: {"decision": "allowAlways"}

    monkeypatch.setattr(helpers.Crank, "__init__", answering_always)
    folder = project(tmp_path)
    server = everything()
    mcp_file(folder, {"everything": server})
    with ModelServer({"replies": [{"text": "hi"}]}) as model:
        opts = options(model, tmp_path, trusted=True, mcpServers={"everything": odd("exit")})
        async with running_server(tmp_path, [folder], opts) as crank:
            await crank.wait_for(
                lambda e: (
                    e["event"]["type"] == "mcp_changed"
                    and [(s["source"], s["state"]) for s in e["event"]["servers"]]
                    == [("workspace", "ready")]
                ),
                within=GUARD_S,
            )
            [question] = crank.permission_requests
            assert question["toolName"] == "mcpServer"
            assert question["preview"] == {
                "kind": "command",
                "command": server["command"] + " stdio",
            }
            line = await logged(crank, "configured in both")
            assert "the workspace one is used" in line
        async with running_server(tmp_path, [folder], opts) as crank:  # remembered
            await crank.wait_for(
                lambda e: (
                    e["event"]["type"] == "mcp_changed"
                    and [(s["source"], s["state"]) for s in e["event"]["servers"]]
                    == [("workspace", "ready")]
                ),
                within=GUARD_S,
            )
            assert crank.permission_requests == []
