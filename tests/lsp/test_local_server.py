"""A llama-server-shaped local server over the wire (issue 29), through the loopback
model server: its ``/v1/models`` (with ``meta.n_ctx``) and ``/props`` answers are the
shapes the real llama-server gave in ``tests/real/test_local_agents.py``, which runs
the real one where its binary is present."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.model_server import ModelServer

from .helpers import running_server
from .test_runs import project

TEMPLATE_WITHOUT_TOOLS = {"supports_tools": False, "supports_tool_calls": False}


async def test_a_base_url_alone_window_and_tools_are_known_before_the_first_reply(
    tmp_path: Path,
) -> None:
    with ModelServer({"replies": [{"text": "I would change the minus to a plus."}]}) as model:
        model.routes["/v1/models"] = {"data": [{"id": "smol.gguf", "meta": {"n_ctx": 4096}}]}
        model.routes["/props"] = {
            "default_generation_settings": {"n_ctx": 4096},
            "chat_template_caps": TEMPLATE_WITHOUT_TOOLS,
        }
        provider = {"api": "openai", "baseUrl": f"{model.url}/v1"}
        options = {"provider": provider, "sessionDir": str(tmp_path / "sessions")}
        async with running_server(tmp_path, [project(tmp_path)], options) as crank:
            await crank.request("crank/state", {})  # the workspace starts
            await crank.wait_for(
                lambda e: (
                    e["event"]["type"] == "usage_update" and e["event"]["contextWindow"] == 4096
                )
            )
            state = await crank.request("crank/state", {})
            assert state.get("configError") is None
            assert state["model"] == {
                "api": "openai",
                "id": "smol.gguf",
                "contextWindow": 4096,
                "baseUrl": f"{model.url}/v1",
            }
            told = [e["event"] for e in crank.events if e["event"]["type"] == "notice"]
            assert [n["kind"] for n in told] == ["model_discovered"]

            answer = await crank.request("crank/prompt", {"text": "Fix the bug in calc.py."})
            await crank.settled(answer["runId"])
            told = [e["event"] for e in crank.events if e["event"]["type"] == "notice"]
            assert [n["kind"] for n in told] == ["model_discovered", "tools_unsupported"]
            assert told[1]["message"].startswith("this server cannot call tools")
            (chat,) = [r["body"] for r in model.requests if "messages" in r.get("body", {})]
            assert chat["model"] == "smol.gguf" and chat["tool_choice"] == "auto"
            rest = {key: value for key, value in chat.items() if key != "max_tokens"}
            estimate = len(json.dumps(rest, ensure_ascii=False)) // 4
            assert 16 <= chat["max_tokens"] <= 4096 - estimate, "the window minus the request"
