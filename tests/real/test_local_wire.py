"""What Crank puts on the wire to the real local servers (the C++ llama-server and
llama-cpp-python), read by a relay that forwards every byte unchanged
(``tests/support/wire_tap.py``): the loopback tests check ``max_tokens`` against our
own server; this checks the real ones get it and keep to it (16: the least Crank
asks for, docs/vendors.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lsp.helpers import running_server
from tests.support.llama_server import LlamaServer
from tests.support.wire_tap import WireTap

BOUND = 600.0


@pytest.mark.parametrize("which", ["cpp_server", "llama"])
async def test_max_tokens_reaches_the_real_server_and_bounds_its_reply(
    which: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """``cpp_server``: the C++ llama-server; ``llama``: llama-cpp-python."""
    server: LlamaServer = request.getfixturevalue(which)
    work = tmp_path / "work"
    work.mkdir()
    with WireTap(server.url) as tap:
        provider = {
            "api": "openai",
            "baseUrl": tap.url,
            "model": server.model,
            "maxOutputTokens": 16,
        }
        options = {"provider": provider, "sessionDir": str(tmp_path / "sessions")}
        async with running_server(tmp_path, [work], options) as crank:
            answer = await crank.request(
                "crank/prompt", {"text": "Write a long story about a dragon and a king."}
            )
            events = await crank.settled(answer["runId"], BOUND)
    chats = tap.posted("/chat/completions")
    assert chats, [(r.method, r.path) for r in tap.requests]
    chat = chats[-1]
    assert chat["max_tokens"] == 16 and chat["stream"] is True
    assert chat["model"] == server.model
    (reply,) = [
        e["event"]["message"]
        for e in events
        if e["event"]["type"] == "message_end" and e["event"]["message"]["role"] == "assistant"
    ]
    assert reply["stopReason"] == "length", "the server stopped at max_tokens"
    assert 0 < reply["usage"]["output"] <= 16, reply["usage"]
