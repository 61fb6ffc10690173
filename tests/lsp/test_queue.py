"""crank/removeQueued: one queued message out, the rest kept in order, never the wrong one."""

from __future__ import annotations

from pathlib import Path

from tests.support.model_server import ModelServer

from .helpers import running_server
from .test_runs import options, project, started


async def test_remove_one_queued_message_and_keep_the_rest(tmp_path: Path) -> None:
    script = {
        "replies": [
            {"toolCalls": [{"name": "bash", "arguments": {"command": "sleep 1"}}]},
            {"text": "steered"},
        ]
    }
    with ModelServer(script) as model:
        opts = options(model, tmp_path, permissionMode="auto")
        async with running_server(tmp_path, [project(tmp_path)], opts) as crank:
            run_id = await started(crank, "start")
            await crank.wait_for(lambda e: e["event"]["type"] == "tool_execution_start")
            for text in ("first", "second", "third"):
                await crank.request("crank/steer", {"text": text})
            after = await crank.request(
                "crank/removeQueued", {"queue": "steering", "index": 1, "text": "second"}
            )
            assert after == {"steering": ["first", "third"], "followUp": [], "removed": "second"}
            stale = await crank.request(
                "crank/removeQueued", {"queue": "steering", "index": 1, "text": "first"}
            )
            assert stale["removed"] == "first" and stale["steering"] == ["third"]
            gone = await crank.request(
                "crank/removeQueued", {"queue": "steering", "index": 0, "text": "never queued"}
            )
            assert gone["removed"] is None and gone["steering"] == ["third"]
            try:
                await crank.request("crank/removeQueued", {"queue": "later", "index": 0})
            except Exception as exc:
                assert "queue" in str(exc)
            else:
                raise AssertionError("an unknown queue name must be refused")
            await crank.settled(run_id)
            messages = (await crank.request("crank/messages", {}))["messages"]
            assert [m["content"] for m in messages if m["role"] == "user"] == ["start", "third"]
