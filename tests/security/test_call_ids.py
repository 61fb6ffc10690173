"""Tool-call ids are Crank's own (issue 26, item 5). A provider's id is unique only
within one reply: the loopback server sends ``call_00`` (OpenAI) or ``toolu_00``
(Anthropic) in every reply unless told otherwise, and none at all with
``omitToolIds``. Crank keys calls by their place and sends each call with its own
result under an id unique in the request; an old session whose record reuses ids
opens and continues the same way."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from crank.agent.messages import assistant_message, tool_result, user_message
from crank.session import SessionLog
from tests.support.model_server import ModelServer

from .frontends import crank_run, json_lines

WORDS = ("alpha", "beta", "gamma")


def _pairs(api: str, body: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(call id, its file argument, the text of the result that follows it) for every
    call of a request, checking that each call is answered at once and only once."""
    found: list[tuple[str, str, str]] = []
    messages = body["messages"]
    for number, message in enumerate(messages):
        if api == "openai":
            calls = [
                (c["id"], json.loads(c["function"]["arguments"]).get("path", ""))
                for c in message.get("tool_calls") or []
            ]
            answers = [
                (m["tool_call_id"], str(m["content"]))
                for m in messages[number + 1 : number + 1 + len(calls)]
                if m["role"] == "tool"
            ]
        else:
            content = message["content"] if isinstance(message["content"], list) else []
            calls = [
                (b["id"], b["input"].get("path", "")) for b in content if b["type"] == "tool_use"
            ]
            following = messages[number + 1]["content"] if calls else []
            answers = [
                (b["tool_use_id"], json.dumps(b["content"]))
                for b in following
                if b.get("type") == "tool_result"
            ]
        assert [a[0] for a in answers] == [c[0] for c in calls], message
        found.extend((c[0], c[1], a[1]) for c, a in zip(calls, answers, strict=True))
    ids = [f[0] for f in found]
    assert len(ids) == len(set(ids)), f"ids sent twice in one request: {ids}"
    return found


def _script(omit: bool) -> dict[str, Any]:
    replies: list[dict[str, Any]] = [
        {"toolCalls": [{"name": "read", "arguments": {"path": f"{word}.txt"}}], "omitToolIds": omit}
        for word in WORDS
    ]
    replies.append({"text": "read them all"})
    return {"replies": replies}


@pytest.mark.parametrize(
    ("api", "omit"), [("openai", False), ("openai", True), ("anthropic", False)]
)
def test_reused_or_missing_ids_pair_every_call_with_its_own_result(
    tmp_path: Path, api: str, omit: bool
) -> None:
    for word in WORDS:
        (tmp_path / f"{word}.txt").write_text(f"the word is {word}\n")
    with ModelServer(_script(omit)) as model:
        done = crank_run(
            tmp_path, model, "--json", "--session-dir", str(tmp_path / "s"), "read", api=api
        )
        assert done.returncode == 0, done.stderr.decode()
        assert done.stdout and json_lines(done.stdout)[-1]["event"]["type"] == "agent_settled"
        assert len(model.requests) == 4, "one request per turn: no loop"
        last = _pairs(api, model.requests[-1]["body"])
        assert [
            (path, word in text) for (_, path, text), word in zip(last, WORDS, strict=True)
        ] == [(f"{word}.txt", True) for word in WORDS]
    events = [line["event"] for line in json_lines(done.stdout)]
    started = [e["toolCallId"] for e in events if e["type"] == "tool_execution_start"]
    ended = [e["toolCallId"] for e in events if e["type"] == "tool_execution_end"]
    assert started == ended and len(set(started)) == 3


def test_an_old_session_with_reused_ids_continues(tmp_path: Path) -> None:
    async def old() -> Path:
        with SessionLog.create(tmp_path / "sessions", str(tmp_path)) as log:
            log.append_message_sync(user_message("read"))
            for word in WORDS:
                call = {
                    "type": "toolCall",
                    "id": "call_0",
                    "name": "read",
                    "arguments": {"path": f"{word}.txt"},
                }
                log.append_message_sync(assistant_message([call], stop_reason="toolUse"))
                log.append_message_sync(tool_result("call_0", "read", f"the word is {word}"))
            log.append_message_sync(assistant_message([{"type": "text", "text": "done"}]))
            return log.path

    session = asyncio.run(old())
    with ModelServer({"replies": [{"text": "fine"}]}) as model:
        done = crank_run(tmp_path, model, "--session", str(session), "and now?")
        assert done.returncode == 0, done.stderr.decode()
        assert done.stdout == b"fine\n"
        pairs = _pairs("openai", model.requests[0]["body"])
    assert [word in text for (_, _, text), word in zip(pairs, WORDS, strict=True)] == [True] * 3
    assert [p[0] for p in pairs] == ["call_0", "call_0_2", "call_0_3"]
