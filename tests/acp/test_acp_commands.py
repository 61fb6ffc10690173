"""Available commands over ACP, with the official SDK's client (which parses every
update into the schema's models): ``available_commands_update`` after session/new,
session/load and a new template; ``/skill:`` and built-in prompts; refusals."""

from __future__ import annotations

from pathlib import Path

import acp
import pytest

from tests.support.model_server import ModelServer

from .helpers import RecordingClient, crank_acp

REVIEW = "---\nname: review\ndescription: Review a change\n---\nList every bug in $FILE.\n"


def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    skill = folder / ".crank" / "skills" / "review" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(REVIEW, "utf-8")
    hidden = folder / ".crank" / "skills" / "secret" / "SKILL.md"
    hidden.parent.mkdir(parents=True)
    hidden.write_text("---\nname: secret\ndescription: x\nhidden: true\n---\nShh.\n", "utf-8")
    return folder


def names(client: RecordingClient, index: int = -1) -> list[str]:
    update = client.of("available_commands_update")[index]
    return [command.name for command in update.available_commands]


async def test_commands_are_advertised_and_a_skill_prompt_runs(tmp_path: Path) -> None:
    folder = project(tmp_path)
    client = RecordingClient()
    script = {"replies": [{"text": "Two bugs."}, {"text": "Again."}]}
    async with ModelServer(script) as model, crank_acp(model, tmp_path, client, "--trust") as conn:
        session = await conn.new_session(cwd=str(folder))
        await client.wait_for(
            lambda: client.of("available_commands_update"), "available_commands_update"
        )
        assert names(client) == ["compact", "model", "undo", "skill:review"]
        first = client.of("available_commands_update")[0].available_commands
        assert first[0].input is not None and first[0].input.root.hint == "[instructions]"
        assert first[3].description == "Review a change"

        answer = await conn.prompt(
            session_id=session.session_id, prompt=[acp.text_block("/skill:review calc.py")]
        )
        assert answer.stop_reason == "end_turn"
        sent = model.requests[-1]["body"]["messages"][-1]["content"]
        assert isinstance(sent, str) and sent.startswith('<skill name="review"')
        assert "List every bug in $FILE.\n</skill>\n\ncalc.py" in sent

        # A built-in is performed and said in one chunk; unknown names are refused.
        before = len(client.of("agent_message_chunk"))
        answer = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("/model")])
        assert answer.stop_reason == "end_turn"
        said = client.of("agent_message_chunk")[before:]
        assert len(said) == 1 and said[0].content.text.startswith("Models")
        with pytest.raises(acp.RequestError) as refused:
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("/nope")])
        assert refused.value.code == 1008 and "/skill:review" in str(refused.value)
        with pytest.raises(acp.RequestError) as new:
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("/new")])
        assert "session/new" in str(new.value)
        assert len(model.requests) == 1

        # A template written now is announced with the same list.
        prompts = folder / ".crank" / "prompts"
        prompts.mkdir()
        (prompts / "fix.md").write_text("Fix $1 now.\n", "utf-8")
        await client.wait_for(lambda: "fix" in names(client), "the template in the list")
        assert names(client) == ["compact", "model", "undo", "skill:review", "fix"]
        answer = await conn.prompt(
            session_id=session.session_id, prompt=[acp.text_block("/fix calc.py")]
        )
        assert answer.stop_reason == "end_turn"
        assert model.requests[-1]["body"]["messages"][-1]["content"] == "Fix calc.py now."
        session_id = session.session_id

    # session/load replays what the user typed, then advertises the commands.
    loaded = RecordingClient()
    async with (
        ModelServer({"replies": []}) as model,
        crank_acp(model, tmp_path, loaded, "--trust") as conn,
    ):
        await conn.load_session(cwd=str(folder), session_id=session_id)
        await loaded.wait_for(
            lambda: loaded.of("available_commands_update"), "available_commands_update"
        )
        users = [u.content.text for u in loaded.of("user_message_chunk")]
        assert users == ["/skill:review calc.py", "/fix calc.py"]
        assert names(loaded) == ["compact", "model", "undo", "skill:review", "fix"]


async def test_undo_takes_back_the_last_run_files_its_commands_changed_included(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "d.py").write_text("y = 2\n", "utf-8")
    (folder / "c.txt").write_text("keep me\n", "utf-8")
    calls = [
        {"id": "c1", "name": "bash", "arguments": {"command": "sed -i 's/2/3/' d.py"}},
        {"id": "c2", "name": "bash", "arguments": {"command": "rm c.txt && echo new > b.txt"}},
    ]
    script = {"replies": [{"toolCalls": [call]} for call in calls] + [{"text": "done"}]}
    client = RecordingClient()
    async with (
        ModelServer(script) as model,
        crank_acp(model, tmp_path, client, "--permission-mode", "auto") as conn,
    ):
        session = await conn.new_session(cwd=str(folder))
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("change")])
        assert (folder / "d.py").read_text("utf-8") == "y = 3\n"
        before = len(client.of("agent_message_chunk"))
        answer = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("/undo")])
        assert answer.stop_reason == "end_turn"
        [said] = client.of("agent_message_chunk")[before:]
        assert said.content.text.startswith("Took back run run-1-")
        assert "3 file(s) restored" in said.content.text
        assert (folder / "d.py").read_text("utf-8") == "y = 2\n"
        assert (folder / "c.txt").read_text("utf-8") == "keep me\n"
        assert not (folder / "b.txt").exists()
        again = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("/undo")])
        assert again.stop_reason == "end_turn"
        assert client.of("agent_message_chunk")[-1].content.text.startswith("Nothing to undo")
        assert len(model.requests) == 3  # /undo never reached the model
