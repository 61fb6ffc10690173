"""A lone surrogate coming in (valid JSON ``"\\ud800"``, not text) is refused by name
(issue 26, item 2): as a request id, a method or inside a prompt's text it gets -32602
naming the field, over ``crank serve`` and ``crank acp``; nothing is accepted half-way
(no run starts, nothing is saved) and everything after it is answered."""

from __future__ import annotations

import json
from pathlib import Path

from tests.lsp.wire import frame, request
from tests.support.model_server import ModelServer

from .frontends import acp_agent, acp_session, lsp_run, lsp_server, prompt_params

LONE = "\ud800"


async def test_serve_refuses_surrogates_by_field_and_keeps_answering(tmp_path: Path) -> None:
    with ModelServer({"replies": [{"text": "fine"}]}) as model:
        async with lsp_server(tmp_path, model) as wire:
            wire.send(request(f"id{LONE}", "crank/state", {}))
            wire.send(request("m1", f"crank/st{LONE}ate", {}))
            wire.send(request("p1", "crank/prompt", {"text": f"hello {LONE}"}))
            wire.send(
                frame(
                    b'{"jsonrpc":"2.0","id":"p2","method":"crank/prompt",'
                    b'"params":{"text":"x","context":[{"uri":"\\udcff"}]}}'
                )
            )
            wire.send(request("s1", "crank/state", {}))
            assert "result" in await wire.answer("s1")
            for msg_id, field in (
                ("m1", "method"),
                ("p1", "params.text"),
                ("p2", "params.context.0.uri"),
            ):
                error = await wire.error(msg_id)
                assert error["code"] == -32602 and error["message"].startswith(field), error
            [null] = [a for a in wire.null_answers if "surrogate" in a["error"]["message"]]
            assert null["error"]["code"] == -32602 and null["error"]["message"].startswith("id")
            assert not [m for m in wire.messages if m.get("method") == "crank/event"]
            events = await lsp_run(wire, "p3", "hello")
            assert any(e["type"] == "agent_settled" for e in events)
        assert len(model.requests) == 1
        assert LONE not in json.dumps(model.requests[0]["body"], ensure_ascii=False)
    [session] = list((tmp_path / "sessions").rglob("*.jsonl"))
    assert b"\\ud800" not in session.read_bytes()


async def test_acp_refuses_surrogates_by_field_and_keeps_answering(tmp_path: Path) -> None:
    with ModelServer({"replies": [{"text": "fine"}]}) as model:
        async with acp_agent(tmp_path, model) as agent:
            session_id = await acp_session(agent, tmp_path)
            agent.request(f"id{LONE}", "session/new", {"cwd": str(tmp_path), "mcpServers": []})
            agent.request(2, f"session/pro{LONE}mpt", prompt_params(session_id, "x"))
            agent.request(3, "session/prompt", prompt_params(session_id, f"hi {LONE}"))
            answer = await agent.call(4, "session/prompt", prompt_params(session_id, "hi"))
            assert answer.get("result", {}).get("stopReason") == "end_turn", answer
            for msg_id, field in ((2, "method"), (3, "params.prompt.0.text")):
                error = (await agent.answer(msg_id))["error"]
                assert error["code"] == -32602 and error["message"].startswith(field), error
            [null] = agent.answers[None]
            assert null["error"]["code"] == -32602 and null["error"]["message"].startswith("id")
        assert len(model.requests) == 1
