"""A seeded fuzz of hostile input across ``crank serve``, ``crank acp`` and ``crank run``
(issue 26, "the fuzz grows teeth"). Three classes, each counting what held:

- **surrogates**: requests with a lone surrogate in the id, the method or a string of
  the params, mixed with valid ones. Every request is answered exactly once (one with
  a surrogate in its id with id null, -32602), no run starts from a refused prompt, and
  the frontend still answers and runs a prompt afterwards.
- **odd names**: a workspace with names that are not UTF-8 (random bytes, nested), and
  a loopback model calling ls, find, grep, read and bash over it in random mixes.
- **call ids**: the same model reusing one id for every call (within a reply too),
  sending none, or the loopback server's default (``call_00`` every turn), from the
  OpenAI and the Anthropic API.

The odd-name and call-id episodes run in sequence on one frontend (``crank run``: one
process per episode, each continuing the last session). Every run must settle with
each tool closed under the id it was opened with, every request sent must pair each
call with its own result under an id unique in the request, every session line must be
strict UTF-8 JSON without a lone surrogate, and a fresh process must continue the
session. Anything else (a wedge, a crash, a lost event, a poisoned session) fails with
the seed in the message. ``CRANK_FUZZ_SEED`` changes the seed; nothing is timed."""

from __future__ import annotations

import os
import random
from collections import Counter
from pathlib import Path
from typing import Any

import msgspec

from crank.agent import wiretext
from tests.lsp.wire import Wire, request
from tests.support.model_server import ModelServer

from .frontends import (
    AcpWire,
    acp_agent,
    acp_session,
    bad_workspace,
    crank_run,
    json_lines,
    lsp_call,
    lsp_run,
    lsp_server,
    lsp_wait,
    prompt_params,
)

SEED = int(os.environ.get("CRANK_FUZZ_SEED", "26"))
SURROGATE_MESSAGES = 120
EPISODES = 4
LONE = ("\ud800", "\udcff", "\udfff", "\udbff")


def _odd_names(rng: random.Random, folder: Path) -> None:
    bad_workspace(folder)
    root = os.fsencode(folder)
    for number in range(4):
        name = bytes(rng.randrange(0x80, 0x100) for _ in range(rng.randrange(1, 4)))
        parent = root if number % 2 else os.path.join(root, b"d\xfe\xfe")
        with open(os.path.join(parent, b"n" + name + b".txt"), "wb") as handle:
            handle.write(b"needle " + name + b"\n")


def _file_call(rng: random.Random) -> dict[str, Any]:
    return rng.choice(
        [
            {"name": "ls", "arguments": {"path": rng.choice([".", "d\udcfe\udcfe"])}},
            {"name": "find", "arguments": {"pattern": rng.choice(["**/*", "*.txt", "**/*.py"])}},
            {"name": "grep", "arguments": {"pattern": rng.choice(["needle", "n.*e", "\\xff"])}},
            {"name": "read", "arguments": {"path": "ok.txt"}},
            {"name": "bash", "arguments": {"command": "ls -R; printf 'a\\377b\\n'"}},
        ]
    )


def _episode(rng: random.Random, api: str) -> tuple[list[dict[str, Any]], str]:
    """The replies of one run (tool turns, then text) and the id mode it plays."""
    modes = ["same", "default"] + (["missing"] if api == "openai" else [])
    mode = rng.choice(modes)
    replies: list[dict[str, Any]] = []
    for _ in range(rng.randrange(1, 4)):
        calls = [_file_call(rng) for _ in range(rng.randrange(1, 4))]
        if mode == "same":
            calls = [{**c, "id": "call_0" if api == "openai" else "toolu_0"} for c in calls]
        replies.append({"toolCalls": calls, "omitToolIds": mode == "missing"})
    replies.append({"text": f"episode done {rng.randrange(10**6)}"})
    return replies, mode


def _pairs_of(api: str, body: dict[str, Any]) -> int:
    """Check one request: each call answered at once by its own result, ids unique."""
    ids: list[str] = []
    messages = body["messages"]
    for number, message in enumerate(messages):
        if api == "openai":
            calls = [c["id"] for c in message.get("tool_calls") or []]
            answers = [
                m.get("tool_call_id")
                for m in messages[number + 1 : number + 1 + len(calls)]
                if m["role"] == "tool"
            ]
        else:
            content = message["content"] if isinstance(message["content"], list) else []
            calls = [b["id"] for b in content if b["type"] == "tool_use"]
            following = messages[number + 1]["content"] if calls else []
            answers = [b["tool_use_id"] for b in following if b.get("type") == "tool_result"]
        assert answers == calls, f"seed {SEED}: a call without its own result: {message}"
        ids.extend(calls)
    assert len(ids) == len(set(ids)), f"seed {SEED}: ids sent twice in one request: {ids}"
    return len(ids)


def _check_run(events: list[dict[str, Any]], tally: Counter[str]) -> None:
    kinds = [e["type"] for e in events]
    assert kinds.count("agent_settled") == 1, f"seed {SEED}: {kinds}"
    starts = [e["toolCallId"] for e in events if e["type"] == "tool_execution_start"]
    ends = [e["toolCallId"] for e in events if e["type"] == "tool_execution_end"]
    assert starts == ends and len(set(starts)) == len(starts), f"seed {SEED}: {starts} {ends}"
    assert next(e for e in events if e["type"] == "agent_end")["stopReason"] != "error", events
    tally["runs settled"] += 1
    tally["tools closed under their own id"] += len(ends)


def _check_requests(api: str, model: ModelServer, tally: Counter[str]) -> None:
    for sent in model.requests:
        assert wiretext.lone_surrogate_at(sent["body"]) is None, f"seed {SEED}: {sent}"
        tally["calls paired in requests"] += _pairs_of(api, sent["body"])
        tally["requests paired"] += 1


def _check_sessions(folder: Path, tally: Counter[str]) -> None:
    files = list(folder.rglob("*.jsonl"))
    assert files, f"seed {SEED}: no session in {folder}"
    for path in files:
        for line in path.read_bytes().splitlines():
            msgspec.json.decode(line)  # strict UTF-8, no lone surrogate escape
            tally["session lines clean"] += 1


def _report(name: str, tally: Counter[str]) -> None:
    print(f"[fuzz seed {SEED}] {name}: " + ", ".join(f"{k} {v}" for k, v in tally.items()))


# -- surrogates ------------------------------------------------------------------------


def _surrogate_messages(rng: random.Random, texts: list[str]) -> list[tuple[Any, str, Any, str]]:
    """(id, method, params, where the surrogate is: id, method, params or none)."""
    out = []
    for number in range(SURROGATE_MESSAGES):
        lone = rng.choice(LONE)
        method, params = rng.choice(texts), {}
        where = rng.choice(["id", "method", "params", "params", "none"])
        msg_id: Any = f"s{number}" if rng.random() < 0.5 else 10_000 + number
        if where == "id":
            msg_id = f"s{number}{lone}"
        elif where == "method":
            method = method[:3] + lone + method[3:]
        out.append((msg_id, method, params, where))
        if where == "params":
            out[-1] = (msg_id, method, {"text": f"x{lone}y", "nested": [{"k": lone}]}, where)
    return out


async def test_surrogates_over_serve(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    tally: Counter[str] = Counter()
    methods = ["crank/state", "crank/prompt", "crank/steer", "crank/sessions", "crank/models"]
    with ModelServer({"rules": [{"lastUserContains": "", "reply": {"text": "ok"}}]}) as model:
        async with lsp_server(tmp_path, model) as wire:
            plan = _surrogate_messages(rng, methods)
            for msg_id, method, params, _ in plan:
                wire.send(request(msg_id, method, params or {"text": "valid"}))
            wire.send(request("last", "crank/state", {}))
            await wire.answer("last")
            await _all_answered_lsp(wire, plan, tally)
            prompts = [p[0] for p in plan if p[1] == "crank/prompt"]
            await lsp_wait(wire, lambda: _idle(wire, prompts), "every accepted run to settle")
            events = await lsp_run(wire, "after", "after the storm")
            _check_run(events, tally)
    _check_sessions(tmp_path / "sessions", tally)
    _report("surrogates over crank serve", tally)


def _idle(wire: Wire, prompts: list[Any]) -> bool:
    """Every run the server accepted has settled (none starts without an answer)."""
    accepted = sum(
        1
        for msg_id in prompts
        for answer in wire.answers.get(msg_id, [])
        if "runId" in (answer.get("result") or {})
    )
    kinds = [
        m["params"]["event"]["type"]
        for m in wire.messages
        if isinstance(m, dict) and m.get("method") == "crank/event"
    ]
    return kinds.count("agent_start") == kinds.count("agent_settled") == accepted


async def _all_answered_lsp(wire: Wire, plan: list[Any], tally: Counter[str]) -> None:
    named = [p for p in plan if p[3] != "id"]
    await lsp_wait(wire, lambda: all(p[0] in wire.answers for p in named), "every request answered")
    for msg_id, _, _, where in named:
        answers = wire.answers[msg_id]
        assert len(answers) == 1, f"seed {SEED}: {msg_id!r} answered {len(answers)} times"
        if where in ("method", "params"):
            assert answers[0]["error"]["code"] == -32602, answers[0]
            tally[f"{where} surrogate refused by name"] += 1
        else:
            tally["valid answered once"] += 1
    by_id = [p for p in plan if p[3] == "id"]
    nulls = [a for a in wire.null_answers if "surrogate" in a["error"]["message"]]
    assert len(nulls) == len(by_id), f"seed {SEED}: {len(nulls)} null answers, {len(by_id)} due"
    tally["id surrogate refused with id null"] += len(nulls)


async def test_surrogates_over_acp(tmp_path: Path) -> None:
    rng = random.Random(SEED + 1)
    tally: Counter[str] = Counter()
    with ModelServer({"rules": [{"lastUserContains": "", "reply": {"text": "ok"}}]}) as model:
        async with acp_agent(tmp_path, model) as agent:
            session_id = await acp_session(agent, tmp_path)
            methods = ["session/prompt", "session/new", "session/set_mode", "initialize"]
            plan = _surrogate_messages(rng, methods)
            for msg_id, method, params, where in plan:
                if method.startswith("session/prompt") and where != "params":
                    params = prompt_params(session_id, "hello")
                elif method.startswith("session/prompt"):
                    params = prompt_params(session_id, params["text"])
                agent.request(msg_id, method, params or {"protocolVersion": 1})
            await _all_answered_acp(agent, plan, tally)
            answer = await agent.call("after", "session/prompt", prompt_params(session_id, "hi"))
            assert answer.get("result", {}).get("stopReason") == "end_turn", answer
            tally["prompt after the storm"] += 1
        _check_requests("openai", model, tally)
    _check_sessions(tmp_path / "acp-sessions", tally)
    _report("surrogates over crank acp", tally)


async def _all_answered_acp(agent: AcpWire, plan: list[Any], tally: Counter[str]) -> None:
    named = [p for p in plan if p[3] != "id"]
    by_id = [p for p in plan if p[3] == "id"]
    await agent.wait(
        lambda: (
            all(p[0] in agent.answers for p in named)
            and len(agent.answers.get(None, [])) >= len(by_id)
        ),
        "every request answered",
    )
    for msg_id, _, _, where in named:
        answers = agent.answers[msg_id]
        assert len(answers) == 1, f"seed {SEED}: {msg_id!r} answered {len(answers)} times"
        if where in ("method", "params"):
            assert answers[0]["error"]["code"] == -32602, answers[0]
            tally[f"{where} surrogate refused by name"] += 1
        else:
            tally["valid answered once"] += 1
    assert len(agent.answers.get(None, [])) == len(by_id)
    tally["id surrogate refused with id null"] += len(by_id)


# -- odd names and call ids, episode by episode ---------------------------------------


def test_episodes_over_run(tmp_path: Path) -> None:
    for api in ("openai", "anthropic"):
        rng = random.Random(f"{SEED}-{api}")
        tally: Counter[str] = Counter()
        work = tmp_path / api
        _odd_names(rng, work)
        sessions = tmp_path / f"sessions-{api}"
        for number in range(EPISODES):
            replies, mode = _episode(rng, api)
            with ModelServer({"replies": replies}) as model:
                args = ["--json", "--session-dir", str(sessions)]
                if number:
                    args.append("--continue")
                done = crank_run(work, model, *args, f"episode {number} {mode}", api=api)
                assert done.returncode == 0, f"seed {SEED}: {done.stderr.decode(errors='replace')}"
                _check_run([line["event"] for line in json_lines(done.stdout)], tally)
                assert len(model.requests) == len(replies), f"seed {SEED}: loops or drops"
                _check_requests(api, model, tally)
                tally[f"episodes with {mode} ids"] += 1
            _check_sessions(sessions, tally)
            tally["session reopened"] += 1 if number else 0
        _report(f"odd names and call ids over crank run ({api})", tally)


async def test_episodes_over_serve(tmp_path: Path) -> None:
    rng = random.Random(f"{SEED}-serve")
    tally: Counter[str] = Counter()
    _odd_names(rng, tmp_path / "p")
    episodes = [_episode(rng, "anthropic") for _ in range(EPISODES)]
    replies = [reply for episode, _ in episodes for reply in episode]
    with ModelServer({"replies": [*replies, {"text": "reopened"}]}) as model:
        model_options = {"api": "anthropic", "baseUrl": model.url, "model": "claude-test"}
        async with lsp_server(tmp_path, model, provider=model_options) as wire:
            for number, (_, mode) in enumerate(episodes):
                _check_run(await lsp_run(wire, f"e{number}", f"episode {mode}"), tally)
                tally[f"episodes with {mode} ids"] += 1
        _check_sessions(tmp_path / "sessions", tally)
        async with lsp_server(tmp_path, model, provider=model_options) as wire:
            sessions = (await lsp_call(wire, "l", "crank/sessions", {}))["result"]["sessions"]
            opened = await lsp_call(
                wire, "o", "crank/openSession", {"sessionId": sessions[0]["sessionId"]}
            )
            assert "result" in opened, opened
            _check_run(await lsp_run(wire, "again", "after reopening"), tally)
            tally["session reopened"] += 1
        assert len(model.requests) == len(replies) + 1, f"seed {SEED}: loops or drops"
        _check_requests("anthropic", model, tally)
    _report("odd names and call ids over crank serve (anthropic)", tally)


async def test_episodes_over_acp(tmp_path: Path) -> None:
    rng = random.Random(f"{SEED}-acp")
    tally: Counter[str] = Counter()
    work = tmp_path / "w"
    _odd_names(rng, work)
    episodes = [_episode(rng, "openai") for _ in range(EPISODES)]
    replies = [reply for episode, _ in episodes for reply in episode]
    with ModelServer({"replies": [*replies, {"text": "reopened"}]}) as model:
        async with acp_agent(tmp_path, model) as agent:
            session_id = await acp_session(agent, work)
            for number, (_, mode) in enumerate(episodes):
                answer = await agent.call(
                    number, "session/prompt", prompt_params(session_id, f"episode {mode}")
                )
                assert answer.get("result", {}).get("stopReason") == "end_turn", answer
                tally["runs answered"] += 1
                tally[f"episodes with {mode} ids"] += 1
        _check_sessions(tmp_path / "acp-sessions", tally)
        async with acp_agent(tmp_path, model) as agent:
            params = {"sessionId": session_id, "cwd": str(work), "mcpServers": []}
            assert "result" in await agent.call("load", "session/load", params)
            answer = await agent.call("again", "session/prompt", prompt_params(session_id, "on"))
            assert answer.get("result", {}).get("stopReason") == "end_turn", answer
            tally["session reopened"] += 1
        assert len(model.requests) == len(replies) + 1, f"seed {SEED}: loops or drops"
        _check_requests("openai", model, tally)
    _report("odd names and call ids over crank acp (openai)", tally)
