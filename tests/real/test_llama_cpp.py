"""Crank against a real local model server: llama-cpp-python with SmolLM2-135M.

Through both front doors, as a user runs them: ``crank run`` as a subprocess and
``crank serve`` over stdio. Few tests, small outputs (``maxOutputTokens`` from the
user config file), one server for the session: the machine has two shared cores.
Nothing here is timed; the bounds only stop a regression from hanging the suite.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.lsp.helpers import running_server, server_env
from tests.support.llama_server import LlamaServer

CRANK_RUN = [sys.executable, "-m", "crank.cli", "run", "--read-only"]
BOUND = 600.0
"""Seconds before a wait counts as a hang (a loaded two-core machine; nothing is timed)."""


def configure(tmp_path: Path, provider: dict[str, Any]) -> dict[str, str]:
    """An environment with HOME and the XDG folders in tmp_path, and a user config file
    holding ``provider`` (what a user would write in ~/.config/crank/config.json)."""
    env = server_env(tmp_path)
    config = Path(env["XDG_CONFIG_HOME"]) / "crank"
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.json").write_text(json.dumps({"provider": provider}), "utf-8")
    return env


def session_lines(directory: Path) -> list[dict[str, Any]]:
    (file,) = directory.rglob("*.jsonl")
    return [json.loads(line) for line in file.read_text("utf-8").splitlines()]


def evidence_of(llama: LlamaServer, crank_log: Path) -> str:
    """What both sides logged, for a failure message: the model server's requests and
    errors, and Crank's connections (which were new, which reused, how each ended)."""
    crank = [
        line
        for line in crank_log.read_text("utf-8").splitlines()
        if any(k in line for k in ("httpcore.connection", "headers", "crank.vendors", "httpx"))
    ]
    ours = "\n".join(crank[-60:])
    return f"--- llama-cpp-python:\n{llama.tail(60)}--- crank:\n{ours}"


def test_crank_run_streams_an_answer_and_records_its_usage(
    llama: LlamaServer, tmp_path: Path
) -> None:
    env = configure(tmp_path, {"maxOutputTokens": 12})
    env.update(OPENAI_BASE_URL=llama.url, CRANK_MODEL=llama.model)
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(
        [*CRANK_RUN, "--json", "--session-dir", str(tmp_path / "sessions"), "Say hello."],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=BOUND,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line)["event"] for line in done.stdout.splitlines()]
    deltas = [
        e["delta"]["text"]
        for e in events
        if e["type"] == "message_update" and e["delta"]["kind"] == "text"
    ]
    assert len(deltas) > 1 and "".join(deltas).strip(), "streamed in pieces"
    (end,) = [e for e in events if e["type"] == "message_end" and e["message"]["role"] != "user"]
    assert end["message"]["stopReason"] in ("stop", "length")
    recorded = [
        line["message"]
        for line in session_lines(tmp_path / "sessions")
        if line.get("type") == "message" and line["message"]["role"] == "assistant"
    ]
    assert len(recorded) == 1
    usage = recorded[0]["usage"]
    assert usage["input"] > 0 and usage["output"] > 0, usage
    assert recorded[0]["content"][0]["text"] == "".join(deltas)


def test_crank_run_names_the_url_when_nothing_listens(tmp_path: Path) -> None:
    """Not the llama server: a port nobody listens on, one message naming it."""
    from tests.support.llama_server import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"
    env = configure(tmp_path, {})
    env.update(OPENAI_BASE_URL=url, CRANK_MODEL="smollm2")
    done = subprocess.run(
        [*CRANK_RUN, "--session-dir", str(tmp_path / "s"), "hi"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=BOUND,
        check=False,
    )
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and f"{url}/chat/completions" in errors[0], done.stderr
    assert "is the server running" in errors[0]


async def test_crank_serve_lists_the_served_model_and_aborts_mid_stream(
    llama: LlamaServer, tmp_path: Path
) -> None:
    provider = {"api": "openai", "baseUrl": llama.url, "model": llama.model, "maxOutputTokens": 150}
    work = tmp_path / "work"
    work.mkdir()
    options = {"provider": provider, "sessionDir": str(tmp_path / "sessions")}
    async with running_server(tmp_path, [work], options) as crank:
        models = (await crank.request("crank/models", {}))["models"]
        served = [m for m in models if m.get("source") == "server"]
        assert [m["id"] for m in served] == [llama.model]
        assert any(m["source"] == "catalog" for m in models), "cloud models beside it"

        answer = await crank.request(
            "crank/prompt", {"text": "Write a long story about a lighthouse keeper."}
        )
        run_id = answer["runId"]
        await crank.wait_for(
            lambda e: e.get("runId") == run_id and e["event"]["type"] == "message_update", BOUND
        )
        assert (await crank.request("crank/abort", {}))["stopReason"] == "aborted"
        events = await crank.settled(run_id, BOUND)
        ends = [
            e["event"]["message"]
            for e in events
            if e["event"]["type"] == "message_end" and e["event"]["message"]["role"] == "assistant"
        ]
        assert ends and ends[-1]["stopReason"] == "aborted"
        assert ends[-1]["content"] and ends[-1]["content"][0]["text"], "the partial answer kept"

        again = await crank.request("crank/prompt", {"text": "Say yes."})
        after = await crank.settled(again["runId"], BOUND)
        last = [e["event"] for e in after if e["event"]["type"] == "message_end"][-1]
        assert last["message"]["stopReason"] in ("stop", "length"), "the server is still usable"


async def test_crank_serve_at_the_context_wall(llama: LlamaServer, tmp_path: Path) -> None:
    """A conversation that outgrows the server's n_ctx (1024), which llama-cpp-python
    reports nowhere but in a refusal: Crank learns the window from the refusal, says
    so in crank/state, and compacts (or, with nothing left to cut, says it is an
    overflow); it never ends as an unexplained network error."""
    provider = {"api": "openai", "baseUrl": llama.url, "model": llama.model, "maxOutputTokens": 8}
    work = tmp_path / "work"
    work.mkdir()
    options = {"provider": provider, "sessionDir": str(tmp_path / "sessions")}
    filler = " ".join(f"line {n} of the notes." for n in range(55))  # ~400 tokens
    crank_log = tmp_path / "crank.log"  # httpcore's DEBUG lines show each connection's fate
    args = ("--log-file", str(crank_log), "--log-level", "DEBUG")
    async with running_server(tmp_path, [work], options, server_args=args) as crank:
        assert (await crank.request("crank/state", {}))["usage"]["contextWindow"] == 8192
        outcomes = []
        for turn in range(2):  # the second no longer fits beside the first
            answer = await crank.request(
                "crank/prompt", {"text": f"Part {turn}: {filler} Reply with one word."}
            )
            events = await crank.settled(answer["runId"], BOUND)
            outcomes.append([e["event"] for e in events])
        state = await crank.request("crank/state", {})
    replies = [
        e["message"]
        for run in outcomes
        for e in run
        if e["type"] == "message_end" and e["message"]["role"] == "assistant"
    ]
    seen = [
        (e["type"], e.get("reason"))
        for run in outcomes
        for e in run
        if e["type"].startswith("compaction")
    ]
    told = [(r.get("stopReason"), r.get("errorKind"), r.get("errorMessage")) for r in replies]
    evidence = f"{told} {seen}\n{evidence_of(llama, crank_log)}"
    assert state["usage"]["contextWindow"] == llama.n_ctx, f"learned from the refusal: {evidence}"
    assert not any(r.get("errorKind") == "network" for r in replies), evidence
    compacted = any(e["type"] == "compaction_end" for run in outcomes for e in run)
    overflows = [r for r in replies if r.get("errorKind") == "overflow"]
    assert compacted or overflows
    for reply in overflows:
        assert str(llama.n_ctx) in reply["errorMessage"], "the message names the window"
