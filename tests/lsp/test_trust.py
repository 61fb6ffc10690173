"""Workspace Trust and the prompt watcher over the wire.

The VS Code client starts an untrusted workspace with ``initializationOptions.crank
.trusted = false`` and, when the user grants trust, sends
``workspace/didChangeConfiguration`` with ``{crank: {trusted: true, ...}}``. The newer
setting must win over the initialization option.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from lsprotocol import types

from tests.support.model_server import ModelServer

from .helpers import Crank, running_server
from .test_runs import options, project

RULE = "Always answer in haiku."


def push(crank: Crank, crank_settings: dict[str, Any]) -> None:
    crank.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"crank": crank_settings})
    )


def prompt_changes(crank: Crank) -> list[dict[str, Any]]:
    return [e["event"] for e in crank.events if e["event"]["type"] == "system_prompt_changed"]


def context_files(sources: list[dict[str, Any]]) -> list[str]:
    return [Path(s["path"]).name for s in sources if s["kind"] == "contextFile"]


async def test_granting_and_revoking_trust_loads_and_drops_agents_md(tmp_path: Path) -> None:
    folder = project(tmp_path)
    (folder / "AGENTS.md").write_text(RULE + "\n")
    with ModelServer({"replies": []}) as model:
        opts = options(model, tmp_path, trusted=False)
        async with running_server(tmp_path, [folder], opts) as crank:
            before = await crank.request("crank/systemPrompt", {})
            assert RULE not in before["text"]
            assert any(
                s["kind"] == "skipped" and s["path"].endswith("AGENTS.md")
                for s in before["sources"]
            )
            assert (await crank.request("crank/state", {}))["trusted"] is False

            push(crank, {"trusted": True})
            changed = await crank.wait_for(
                lambda e: e["event"]["type"] == "system_prompt_changed", within=5
            )
            trusted = await crank.request("crank/systemPrompt", {})
            assert RULE in trusted["text"]
            assert changed["event"]["hash"] == trusted["hash"] != before["hash"]
            assert changed["event"]["sources"] == trusted["sources"]
            assert context_files(trusted["sources"]) == ["AGENTS.md"]
            state = await crank.request("crank/state", {})
            assert state["trusted"] is True
            assert state["model"] == {"api": "openai", "id": "test"}  # the provider stayed

            push(crank, {"trusted": False})
            await crank.wait_for(
                lambda e: len(prompt_changes(crank)) == 2 and e is crank.events[-1], within=5
            )
            dropped = await crank.request("crank/systemPrompt", {})
            assert RULE not in dropped["text"] and dropped["hash"] == before["hash"]
            assert prompt_changes(crank)[-1]["hash"] == before["hash"]
            assert (await crank.request("crank/state", {}))["trusted"] is False


async def test_trust_through_workspace_configuration(tmp_path: Path) -> None:
    """A client that answers ``workspace/configuration`` sends the change with
    ``settings: null`` and answers the section with the new value."""
    folder = project(tmp_path)
    (folder / "AGENTS.md").write_text(RULE + "\n")
    with ModelServer({"replies": []}) as model:
        opts = options(model, tmp_path, trusted=False)
        async with running_server(tmp_path, [folder], opts, configuration=True) as crank:
            crank.client.set_configuration({"trusted": False}, section="crank")
            assert (await crank.request("crank/state", {}))["trusted"] is False
            crank.client.set_configuration({"trusted": True}, section="crank")
            crank.client.workspace_did_change_configuration(
                types.DidChangeConfigurationParams(settings=None)
            )
            await crank.wait_for(lambda e: e["event"]["type"] == "system_prompt_changed", 5)
            assert RULE in (await crank.request("crank/systemPrompt", {}))["text"]
            assert (await crank.request("crank/state", {}))["trusted"] is True


async def test_the_watcher_over_the_wire(tmp_path: Path) -> None:
    folder = project(tmp_path)
    with ModelServer({"replies": []}) as model:
        opts = options(model, tmp_path, trusted=True)
        async with running_server(tmp_path, [folder], opts) as crank:
            first = await crank.request("crank/systemPrompt", {})
            (folder / "notes.txt").write_text("unrelated\n")
            (folder / "src").mkdir()
            (folder / "src" / "main.py").write_text("print('hi')\n")
            await asyncio.sleep(0.5)
            assert prompt_changes(crank) == []

            (folder / "AGENTS.md").write_text(RULE + "\n")
            changed = await crank.wait_for(
                lambda e: e["event"]["type"] == "system_prompt_changed", within=1.0
            )
            now = await crank.request("crank/systemPrompt", {})
            assert changed["event"]["hash"] == now["hash"] != first["hash"]
            assert RULE in now["text"]


async def test_a_malformed_change_is_logged_and_changes_nothing(tmp_path: Path) -> None:
    folder = project(tmp_path)
    with ModelServer({"replies": []}) as model:
        opts = options(model, tmp_path, trusted=True, permissionMode="autoEdit")
        async with running_server(tmp_path, [folder], opts) as crank:
            push(crank, {"trusted": "yes please"})
            await asyncio.sleep(0.2)
            state = await crank.request("crank/state", {})
            assert state["trusted"] is True and state["permissionMode"] == "autoEdit"
            assert state["model"] == {"api": "openai", "id": "test"}
            logged = [m.message for m in crank.client.log_messages]
            assert any("settings.crank.trusted" in line for line in logged), logged
            push(crank, {"permissionMode": "readOnly"})
            for _ in range(100):
                if (await crank.request("crank/state", {}))["permissionMode"] == "readOnly":
                    break
                await asyncio.sleep(0.02)
            state = await crank.request("crank/state", {})
            assert state["permissionMode"] == "readOnly" and state["trusted"] is True
