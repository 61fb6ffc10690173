"""``system_prompt_changed`` over real ``crank serve``: said when the prompt's inputs
changed, and only then (issue 31: a "system prompt changed" notice appeared while the
prompt sent before and after was byte-identical).

Each test compares the notices with what the model server really received: the system
message of every request. The things a user does without touching AGENTS.md, skills or
settings (prompting twice, the client pushing the settings it already sent, switching
the model and back, a window reload that starts a new server on the same session) must
announce nothing and send the same bytes; an AGENTS.md edit is announced exactly once
and is what the next request carries.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.mcp.servers import everything
from tests.support.model_server import ModelServer

from .helpers import Crank, provider_for, running_server
from .test_context import small_window
from .test_runs import options, project
from .test_sessions import ask
from .test_trust import prompt_changes, push

RULE = "Project rule: NOTICE-MARKER-3d1."


def systems(model: ModelServer) -> list[str]:
    """The system message of every request the model server received, in order."""
    return [r["body"]["messages"][0]["content"] for r in model.requests]


async def rebuilt(crank: Crank) -> dict[str, Any]:
    """The prompt the next run starts with, asked after every earlier message was handled
    (the server answers in order, so a notice caused before this is already sent)."""
    prompt: dict[str, Any] = await crank.request("crank/systemPrompt", {})
    return prompt


async def test_nothing_changed_nothing_announced_across_prompts_settings_model_and_reload(
    tmp_path: Path,
) -> None:
    folder = project(tmp_path)
    (folder / "AGENTS.md").write_text(RULE + "\n")
    replies = [{"text": f"reply {n}"} for n in range(6)]
    with ModelServer({"replies": replies}) as model:
        opts = options(model, tmp_path, trusted=True)
        async with running_server(tmp_path, [folder], opts) as crank:
            first = await ask(crank, "first")
            await ask(crank, "second")
            # What VS Code pushes when trust is granted, with nothing else new.
            push(crank, {"trusted": True})
            await rebuilt(crank)
            # A model switch there and back (the prompt names no model).
            await crank.request("crank/setModel", {"api": "openai", "id": "other-model"})
            await ask(crank, "third")
            await crank.request("crank/setModel", {"api": "openai", "id": "test"})
            await ask(crank, "fourth")
            before = await rebuilt(crank)
            assert prompt_changes(crank) == [], "nothing the prompt is built from changed"

        # A window reload: a new server, the session reopened as the client does.
        async with running_server(tmp_path, [folder], opts) as crank:
            await crank.request("crank/openSession", {"sessionId": first["sessionId"]})
            await ask(crank, "after the reload")
            after = await rebuilt(crank)
            assert prompt_changes(crank) == [], "a new server announces no change of its own"
            assert after["hash"] == before["hash"]

    sent = systems(model)
    assert len(sent) == 5 and len(set(sent)) == 1, "every request carried the same prompt"
    assert RULE in sent[0]


async def test_an_agents_md_edit_is_announced_once_and_reaches_the_next_request(
    tmp_path: Path,
) -> None:
    folder = project(tmp_path)
    (folder / "AGENTS.md").write_text(RULE + "\n")
    replies = [{"text": f"reply {n}"} for n in range(4)]
    with ModelServer({"replies": replies}) as model:
        opts = options(model, tmp_path, trusted=True)
        async with running_server(tmp_path, [folder], opts) as crank:
            await ask(crank, "before the edit")
            (folder / "AGENTS.md").write_text(RULE + "\nAlso: EDITED-MARKER-77a.\n")
            changed = await crank.wait_for(
                lambda e: e["event"]["type"] == "system_prompt_changed", within=15
            )
            await ask(crank, "after the edit")
            await ask(crank, "and again")
            now = await rebuilt(crank)
            assert [e["hash"] for e in prompt_changes(crank)] == [now["hash"]]
            assert changed["event"]["hash"] == now["hash"]

    sent = systems(model)
    assert "EDITED-MARKER-77a" not in sent[0]
    assert all("EDITED-MARKER-77a" in s for s in sent[1:])
    assert len(set(sent[1:])) == 1


async def test_a_client_answering_workspace_configuration_as_vs_code_does_changes_nothing(
    tmp_path: Path,
) -> None:
    """VS Code answers ``workspace/configuration`` with its settings (no key in them) and
    pushes ``{trusted: true}`` when trust is granted: the same prompt, no notice."""
    folder = project(tmp_path)
    (folder / "AGENTS.md").write_text(RULE + "\n")
    with ModelServer({"replies": [{"text": "one"}, {"text": "two"}]}) as model:
        opts = options(model, tmp_path, trusted=True)
        answer = {"provider": {k: v for k, v in provider_for(model.url).items() if k != "apiKey"}}
        async with running_server(
            tmp_path, [folder], opts, section={**answer, "trusted": True}
        ) as crank:
            await ask(crank, "first")
            push(crank, {**answer, "trusted": True})
            await rebuilt(crank)
            await ask(crank, "second")
            assert prompt_changes(crank) == []
    assert len(set(systems(model))) == 1


async def test_compaction_offering_recall_is_a_real_change_announced_once(tmp_path: Path) -> None:
    """The one server-made change: once something is compacted away the tool set gains
    ``recall``, whose line is in the prompt. Announced once, and the next request is
    what it announced; a new session (nothing compacted) drops it again, announced once."""
    folder = project(tmp_path)
    filler = "The module parses the config at src/config.py and caches it. " * 40
    replies = [{"text": filler}, {"text": filler}, {"text": "Goal: explain. Progress: done."}]
    replies += [{"text": "after"}, {"text": "fresh"}]
    with ModelServer({"replies": replies, "estimateUsage": True}) as model:
        opts = small_window(model, tmp_path, 8_000, keepRecentTokens=200)
        async with running_server(tmp_path, [folder], opts) as crank:
            await ask(crank, "explain the config")
            await ask(crank, "go on")
            assert prompt_changes(crank) == []
            assert (await crank.request("crank/compact", {}))["compacted"] is True
            with_recall = await rebuilt(crank)
            await ask(crank, "and now?")
            assert [e["hash"] for e in prompt_changes(crank)] == [with_recall["hash"]]
            await crank.request("crank/newSession", {})
            without = await crank.wait_for(
                lambda e: len(prompt_changes(crank)) == 2 and e is crank.events[-1]
            )
            await ask(crank, "a new start")
            assert len(prompt_changes(crank)) == 2
    sent = systems(model)
    assert "recall" not in sent[0] and sent[0] == sent[1]
    assert "recall" in sent[-2] and with_recall["text"] == sent[-2]
    assert without["event"]["hash"] != with_recall["hash"] and "recall" not in sent[-1]


async def test_mcp_tools_arriving_change_no_byte_of_the_prompt(tmp_path: Path) -> None:
    """The npm reference MCP server's tools join the tool list (and the request's
    ``tools``), never the system prompt: nothing to announce, whenever they arrive."""
    folder = project(tmp_path)
    with ModelServer({"replies": [{"text": "one"}, {"text": "two"}]}) as model:
        opts = options(model, tmp_path, trusted=True, mcpServers={"everything": everything()})
        async with running_server(tmp_path, [folder], opts) as crank:
            await ask(crank, "first")
            await crank.wait_for(
                lambda e: (
                    e["event"]["type"] == "mcp_changed"
                    and e["event"]["servers"][0]["state"] == "ready"
                ),
                within=120,
            )
            await ask(crank, "second")
            await rebuilt(crank)
            assert prompt_changes(crank) == []
    names = [t["function"]["name"] for t in model.requests[-1]["body"]["tools"]]
    assert "mcp__everything__echo" in names, "the tools did arrive"
    assert len(set(systems(model))) == 1
