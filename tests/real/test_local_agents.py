"""Crank as an agent against the two real local servers (issue 29), over ``crank serve``
as an editor runs it: the C++ llama-server (``../shared/bin``) and llama-cpp-python
(the wheel), both with SmolLM2-135M. Bounded, never timed: a tiny model, one thread,
small windows, short replies.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.lsp.helpers import running_server
from tests.lsp.test_runs import untyped_request
from tests.support import llama_server
from tests.support.llama_server import LlamaServer

BOUND = 600.0
BUG = "def add(a, b):\n    return a - b\n"


def notices(events: list[dict[str, Any]], kind: str) -> list[str]:
    return [
        e["event"]["message"]
        for e in events
        if e["event"]["type"] == "notice" and e["event"]["kind"] == kind
    ]


async def test_llama_server_with_a_base_url_alone(cpp_server: LlamaServer, tmp_path: Path) -> None:
    """No model configured: the picker lists what the server serves, Crank takes the one
    model (and says so), and the window (``-c 4096``) is known before the first prompt.
    The model's own template has no tool support, which llama-server's /props says:
    "Fix This File" is answered with the "cannot call tools" notice in the first reply."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "calc.py").write_text(BUG, "utf-8")
    provider = {"api": "openai", "baseUrl": cpp_server.url, "maxOutputTokens": 24}
    options = {"provider": provider, "sessionDir": str(tmp_path / "sessions")}
    async with running_server(tmp_path, [work], options) as crank:
        models = (await crank.request("crank/models", {}))["models"]
        assert [m["id"] for m in models if m["source"] == "server"] == [cpp_server.model]
        await crank.wait_for(
            lambda e: (
                e["event"]["type"] == "usage_update"
                and e["event"]["contextWindow"] == cpp_server.n_ctx
            ),
            BOUND,
        )
        state = await crank.request("crank/state", {})
        assert state["usage"]["contextWindow"] == 4096, "before the first prompt"
        assert state.get("configError") is None
        assert notices(crank.events, "model_discovered")
        models = (await crank.request("crank/models", {}))["models"]
        served = [m for m in models if m["source"] != "catalog"]
        assert served == [
            {"api": "openai", "id": cpp_server.model, "contextWindow": 4096, "source": "server"}
        ]

        answer = await crank.request(
            "crank/prompt", {"text": "Fix the bug in calc.py: add must add."}
        )
        events = await crank.settled(answer["runId"], BOUND)
        (told,) = notices(crank.events, "tools_unsupported")
        assert told.startswith("this server cannot call tools: the agent can only talk")
        replies = [
            e["event"]["message"]
            for e in events
            if e["event"]["type"] == "message_end" and e["event"]["message"]["role"] == "assistant"
        ]
        assert len(replies) == 1, "one reply, no tool turn"
    assert (work / "calc.py").read_text("utf-8") == BUG


@pytest.fixture(scope="module")
def roomy_llama(llama: LlamaServer) -> Iterator[LlamaServer]:
    """A second llama-cpp-python (``--chat_format chatml-function-calling``) with room
    for Crank's system prompt and nine tools (about 1,150 tokens): the session's one
    runs 1,024 on purpose, for the wall."""
    server = llama_server.start(n_ctx=4096, alias="smollm2")
    try:
        yield server
    finally:
        server.stop()


async def test_llama_cpp_python_calls_a_tool(roomy_llama: LlamaServer, tmp_path: Path) -> None:
    """With ``tool_choice: auto`` (which this server needs before it offers tools to the
    model) nothing is forced: SmolLM2 chooses ``read`` for this prompt. Its streamed
    answer to a request with tools is an empty 200, so Crank asks unstreamed."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "main.py").write_text("print('hi')\n", "utf-8")
    provider = {"api": "openai", "baseUrl": roomy_llama.url, "model": "smollm2"}
    provider["maxOutputTokens"] = 40
    options = {
        "provider": provider,
        "sessionDir": str(tmp_path / "sessions"),
        "permissionMode": "readOnly",
    }
    async with running_server(tmp_path, [work], options) as crank:
        answer = await crank.request(
            "crank/prompt", {"text": "Read the file main.py with the read tool."}
        )
        run = answer["runId"]
        # The first call (or the run's end) is what this test is about; SmolLM2 may go
        # on calling tools turn after turn, each a slow unstreamed request on one core,
        # so the run is aborted once a call came back instead of waited out.
        await crank.wait_for(
            lambda e: (
                e.get("runId") == run
                and e["event"]["type"] in ("tool_execution_start", "agent_settled")
            ),
            BOUND,
        )
        await crank.request("crank/abort", {})
        events = await crank.settled(run, BOUND)
        calls = [e["event"] for e in events if e["event"]["type"] == "tool_execution_start"]
        kinds = [e["event"]["type"] for e in events]
        assert calls and calls[0]["toolName"] == "read", f"{kinds}\n{roomy_llama.tail(30)}"
        assert not notices(crank.events, "tools_unsupported")


async def test_llama_cpp_python_fix_this_file_lands_or_says_why(
    roomy_llama: LlamaServer, tmp_path: Path
) -> None:
    """Issue 29's "done when" on this server: "Fix This File" on a one-line bug lands
    the edit or says within one reply why it cannot. SmolLM2 calls ``read`` with a
    path it makes up (``{your_dir}/test.py``), turn after turn; the first reply whose
    calls all failed brings the ``fix_not_applied`` notice naming the call, and the
    run is then aborted (it would go on for minutes a turn)."""
    work = tmp_path / "work"
    work.mkdir()
    target = work / "calc.py"
    target.write_text(BUG, "utf-8")
    provider = {"api": "openai", "baseUrl": roomy_llama.url, "model": "smollm2"}
    provider["maxOutputTokens"] = 60
    # With tools this server answers unstreamed: the whole reply is one silence, past the
    # default 120 s read timeout on a loaded machine (the run then failed, not the fix).
    provider["readTimeoutMs"] = int(BOUND * 1000)
    options = {
        "provider": provider,
        "sessionDir": str(tmp_path / "sessions"),
        "permissionMode": "autoEdit",
    }
    diagnostic = {
        "range": {"start": {"line": 1, "character": 11}, "end": {"line": 1, "character": 16}},
        "message": "add returns a - b: it must return a + b",
        "severity": 1,
    }
    async with running_server(tmp_path, [work], options) as crank:
        arguments = [{"uri": target.as_uri(), "diagnostics": [diagnostic]}]
        command = types.ExecuteCommandParams(command="crank.fixFile", arguments=arguments)
        answer = await untyped_request(crank, types.WORKSPACE_EXECUTE_COMMAND, command)
        run = answer["runId"]
        first = await crank.wait_for(
            lambda e: (
                e.get("runId") == run
                and (
                    e["event"]["type"] == "agent_settled"
                    or (e["event"]["type"] == "notice" and e["event"]["kind"] == "fix_not_applied")
                )
            ),
            BOUND,
        )
        replies_before = sum(
            1
            for e in crank.events
            if e.get("runId") == run
            and e["event"]["type"] == "message_end"
            and e["event"]["message"]["role"] == "assistant"
        )
        await crank.request("crank/abort", {})
        await crank.settled(run, BOUND)
        landed = target.read_text("utf-8") != BUG
        told = first["event"]["type"] == "notice"
        assert landed or told, f"neither landed nor said\n{roomy_llama.tail(30)}"
        if told:
            assert first["event"]["message"].startswith("Fix This File ")
            assert "calc.py" in first["event"]["message"]
            assert replies_before == 1, "said within one reply"


async def test_llama_cpp_python_window_is_learned_once_and_kept(
    llama: LlamaServer, tmp_path: Path
) -> None:
    """This server says its window (1,024 here) only in a refusal: the first request
    (a prompt past 1,024 tokens; this server's plain chat format leaves the tools out
    of the prompt) teaches it, and the next Crank process knows it before its first
    prompt (the data folder's window cache)."""
    work = tmp_path / "work"
    work.mkdir()
    provider = {"api": "openai", "baseUrl": llama.url, "model": llama.model, "maxOutputTokens": 8}
    options = {"provider": provider, "sessionDir": str(tmp_path / "sessions")}
    async with running_server(tmp_path, [work], options) as crank:
        assert (await crank.request("crank/state", {}))["usage"]["contextWindow"] == 8192
        filler = " ".join(f"line {n} of the notes." for n in range(160))  # past 1,024 tokens
        answer = await crank.request("crank/prompt", {"text": f"{filler} One word."})
        await crank.settled(answer["runId"], BOUND)
        state = await crank.request("crank/state", {})
        assert state["usage"]["contextWindow"] == llama.n_ctx, "learned from the refusal"
    async with running_server(tmp_path, [work], options) as crank:
        state = await crank.request("crank/state", {})
        assert state["usage"]["contextWindow"] == llama.n_ctx, "kept across a restart"
