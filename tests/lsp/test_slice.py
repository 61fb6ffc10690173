"""The vertical slice: prompt to settled over stdio, against a loopback model server."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.model_server import ModelServer

from .helpers import provider_for, read_text, running_server


async def test_prompt_streams_every_event_to_settled_and_saves_the_session(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    sessions = tmp_path / "sessions"
    script = {"replies": [{"text": "Hello from the loopback model.", "chunks": 5}]}
    with ModelServer(script) as model:
        options = {"provider": provider_for(model.url), "sessionDir": str(sessions)}
        async with running_server(tmp_path, [project], options) as crank:
            caps = crank.initialize_result.capabilities
            assert caps.experimental["crank"]["protocolVersion"] == 1
            assert "crank.fixFile" in caps.execute_command_provider.commands

            answer = await crank.request("crank/prompt", {"text": "hi"})
            assert set(answer) == {"sessionId", "runId"}
            events = await crank.settled(answer["runId"])

            kinds = [e["event"]["type"] for e in events]
            assert kinds[0] == "agent_start"
            assert kinds[-1] == "agent_settled"
            assert kinds.count("agent_settled") == 1
            assert "usage_update" in kinds
            seqs = [e["seq"] for e in crank.events]
            assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
            assert all(e["workspace"] == project.as_uri() for e in events)
            assert all(e["sessionId"] == answer["sessionId"] for e in events)

            text = "".join(
                e["event"]["delta"]["text"]
                for e in events
                if e["event"]["type"] == "message_update"
                and e["event"]["delta"]["contentIndex"] == 0
            )
            assistant_end = next(
                e["event"]
                for e in events
                if e["event"]["type"] == "message_end"
                and e["event"]["message"]["role"] == "assistant"
            )
            assert text == "Hello from the loopback model."
            assert assistant_end["message"]["content"][0]["text"] == text
            assert assistant_end["entryId"]

            state = await crank.request("crank/state", {})
            assert state["running"] is False
            assert state["model"] == {
                "api": "openai",
                "id": "test",
                "contextWindow": 8192,
                "baseUrl": f"{model.url}/v1",
            }
            messages = (await crank.request("crank/messages", {}))["messages"]
            assert [m["role"] for m in messages] == ["user", "assistant"]

            raw = read_text(Path(state["sessionFile"]))
            lines = [json.loads(line) for line in raw.splitlines()]
            assert lines[0]["type"] == "session"
            ids = {line["id"] for line in lines[1:]}
            assert assistant_end["entryId"] in ids
            assert '"apiKey"' not in raw
