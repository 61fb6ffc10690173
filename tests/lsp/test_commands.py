"""Commands typed by hand, through the real server (``python -m crank.lsp``) and the
loopback model server: ``crank/commands``, ``/skill:`` and template prompts (what the
model receives, what the transcript shows), the built-ins, refusals, and
``crank/commandsChanged`` when a template file appears."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.support.model_server import ModelServer

from .helpers import Crank, running_server
from .test_runs import options, project

REVIEW = """---
name: review
description: Review a change for bugs
---
# Review

Read every changed file and list each bug with its line.
"""
SECRET = """---
name: release
description: Cut a release
hidden: true
---
Bump the version, then tag it.
"""


def workspace_with_skills(tmp_path: Path) -> Path:
    root = project(tmp_path)
    for name, text in (("review", REVIEW), ("release", SECRET)):
        folder = root / ".crank" / "skills" / name
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(text, "utf-8")
    return root


@asynccontextmanager
async def serving(
    tmp_path: Path, root: Path, script: dict[str, Any]
) -> AsyncIterator[tuple[ModelServer, Crank]]:
    async with (
        ModelServer(script) as model,
        running_server(tmp_path, [root], options(model, tmp_path, trusted=True)) as crank,
    ):
        yield model, crank


def last_user_content(request: dict[str, Any]) -> str:
    users = [m for m in request["body"]["messages"] if m["role"] == "user"]
    content = users[-1]["content"]
    return content if isinstance(content, str) else "".join(b["text"] for b in content)


async def test_a_skill_command_sends_the_body_and_the_transcript_keeps_what_was_typed(
    tmp_path: Path,
) -> None:
    root = workspace_with_skills(tmp_path)
    async with serving(
        tmp_path, root, {"replies": [{"text": "No bugs."}, {"text": "Tagged."}]}
    ) as (model, crank):
        listed = (await crank.request("crank/commands", {}))["commands"]
        assert [(c["name"], c["kind"]) for c in listed] == [
            ("compact", "builtin"),
            ("model", "builtin"),
            ("new", "builtin"),
            ("undo", "builtin"),
            ("skill:review", "skill"),
        ]
        assert listed[0]["argumentHint"] == "[instructions]"
        assert listed[4]["description"] == "Review a change for bugs"

        answer = await crank.request("crank/prompt", {"text": "/skill:review src/"})
        await crank.settled(answer["runId"])
        sent = last_user_content(model.requests[-1])
        skill_file = root / ".crank" / "skills" / "review" / "SKILL.md"
        assert sent.startswith(f'<skill name="review" path="{skill_file.resolve()}">')
        assert "Read every changed file and list each bug with its line." in sent
        assert "description: Review" not in sent  # the body, not the front matter
        assert sent.endswith("</skill>\n\nsrc/")

        messages = (await crank.request("crank/messages", {}))["messages"]
        assert messages[0]["typed"] == "/skill:review src/"
        assert messages[0]["content"] == sent
        sessions = (await crank.request("crank/sessions", {}))["sessions"]
        assert sessions[0]["firstMessage"] == "/skill:review src/"
        tree = (await crank.request("crank/tree", {}))["entries"]
        assert [e["preview"] for e in tree if e.get("role") == "user"] == ["/skill:review src/"]

        # A hidden skill is not listed, nor in the system prompt's index, but runs.
        prompt = (await crank.request("crank/systemPrompt", {}))["text"]
        assert "review" in prompt and "release" not in prompt
        answer = await crank.request("crank/prompt", {"text": "/skill:release"})
        await crank.settled(answer["runId"])
        assert "Bump the version, then tag it." in last_user_content(model.requests[-1])


async def test_built_ins_are_performed_and_unknown_commands_refused(tmp_path: Path) -> None:
    root = workspace_with_skills(tmp_path)
    async with serving(
        tmp_path, root, {"replies": [{"text": "ok"}, {"text": "ok"}, {"text": "ok"}]}
    ) as (model, crank):
        listed = await crank.request("crank/prompt", {"text": "/model"})
        assert listed["command"] == "model"
        assert any(m["id"] == "test" for m in listed["result"]["models"]), listed

        switched = await crank.request("crank/prompt", {"text": "/model openai/other"})
        assert switched["result"] == {"model": {"api": "openai", "id": "other"}}
        state = await crank.request("crank/state", {})
        assert (state["model"]["api"], state["model"]["id"]) == ("openai", "other")

        compacted = await crank.request("crank/prompt", {"text": "/compact keep paths"})
        assert compacted["command"] == "compact"
        assert compacted["result"]["compacted"] is False

        before = state["sessionId"]
        fresh = await crank.request("crank/prompt", {"text": "/new"})
        assert fresh["command"] == "new" and fresh["sessionId"] != before
        assert fresh["result"] == {"sessionId": fresh["sessionId"]}

        with pytest.raises(JsonRpcException) as refused:
            await crank.request("crank/prompt", {"text": "/reveiw src/"})
        assert refused.value.code == 1008
        message = str(refused.value.message)
        assert "unknown command /reveiw" in message
        assert "/compact, /model, /new, /undo, /skill:review" in message
        assert "//reveiw" in message
        assert not model.requests  # nothing reached the model

        # '//' sends the rest verbatim; a path is text, not a command.
        for typed, sent in (("//reveiw this", "/reveiw this"), ("/etc/hosts x", None)):
            run = (await crank.request("crank/prompt", {"text": typed}))["runId"]
            await crank.settled(run)
            assert last_user_content(model.requests[-1]) == (sent or typed)
        messages = (await crank.request("crank/messages", {}))["messages"]
        assert all("typed" not in m for m in messages if m["role"] == "user")


async def test_a_new_template_is_announced_and_expanded(tmp_path: Path) -> None:
    root = workspace_with_skills(tmp_path)
    async with serving(tmp_path, root, {"replies": [{"text": "Fixed."}]}) as (model, crank):
        await crank.request("crank/commands", {})
        prompts = root / ".crank" / "prompts"
        prompts.mkdir()
        (prompts / "fix-tests.md").write_text(
            "---\ndescription: Fix failing tests\nargument-hint: FILE [COUNT]\n---\n"
            "Fix the tests in $1 (at most $2 of them). Costs $$0. All: $ARGUMENTS\n",
            "utf-8",
        )
        await crank.until(lambda: bool(crank.commands_changed))
        assert crank.commands_changed[0] == {"workspace": root.as_uri()}
        listed = (await crank.request("crank/commands", {}))["commands"]
        assert listed[-1] == {
            "name": "fix-tests",
            "description": "Fix failing tests",
            "kind": "template",
            "argumentHint": "FILE [COUNT]",
        }
        answer = await crank.request("crank/prompt", {"text": '/fix-tests "a b.py" 3'})
        await crank.settled(answer["runId"])
        assert last_user_content(model.requests[-1]) == (
            'Fix the tests in a b.py (at most 3 of them). Costs $0. All: "a b.py" 3'
        )
        messages = (await crank.request("crank/messages", {}))["messages"]
        assert messages[0]["typed"] == '/fix-tests "a b.py" 3'
