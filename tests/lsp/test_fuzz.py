"""A seeded, bounded fuzz of ``crank serve``: one real server process over stdio is sent
at least 10,000 generated frames, structure-aware: valid messages of the methods Crank
handles, mutated (keys dropped, values swapped for other JSON, wrong ``jsonrpc``, bad
ids and methods, deep nesting, batches, notification methods with ids), bodies damaged
byte by byte, and framings tolerated and refused (header case, LF-only lines, spaces,
bad, negative, doubled, too small and too large lengths, garbage between frames).

Then: every id that was readable in a well-framed frame is answered exactly once, no id
is answered twice or that was never sent, the server still answers a valid request
and exits 0 at end of input, stdout holds nothing but protocol frames (the reader
fails on any other byte), and no provider key (sentinels in the environment and in
``initializationOptions``) appears in stdout or stderr.

``CRANK_FUZZ_SEED`` and ``CRANK_FUZZ_FRAMES`` change the seed and the count (the seed
is in every failure message). Frames are written in batches while answers are read
concurrently, so the run takes seconds; nothing here is timed.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .helpers import server_env
from .wire import Wire, frame, init_params, notification, request, spawn

SEED = int(os.environ.get("CRANK_FUZZ_SEED", "13"))
FRAMES = int(os.environ.get("CRANK_FUZZ_FRAMES", "10000"))
KEYS = ("sk-fuzz-init-SENTINEL-7f3a", "sk-fuzz-openai-SENTINEL-91c2", "sk-ant-fuzz-SENTINEL-d4e8")


def valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def readable_ids(value: Any) -> list[Any]:
    """The ids the server must answer for a message it could read."""
    items = value if isinstance(value, list) else [value]
    found = []
    for item in items:
        if not isinstance(item, dict):
            continue
        if "method" not in item and ("result" in item or "error" in item):
            continue  # an answer: never answered
        if "id" in item and valid_id(item["id"]):
            found.append(item["id"])
    return found


@dataclass
class Plan:
    """What was sent and what must come back."""

    exactly_once: list[Any] = field(default_factory=list)
    at_most_once: list[Any] = field(default_factory=list)
    frames: int = 0
    stream: list[bytes] = field(default_factory=list)
    damaged: bytearray = field(default_factory=bytearray)
    """Damaged bodies: damage can make a new id (or turn an answer into a request)."""


class Generator:
    def __init__(self, rng: random.Random, project: Path) -> None:
        self.rng = rng
        self.count = 0
        self.last_id: Any = 0
        self.doc = (project / "a.py").as_uri()
        self.project = project.as_uri()

    def fresh_id(self) -> Any:
        self.count += 1
        self.last_id = f"f{self.count}" if self.rng.random() < 0.5 else 100_000 + self.count
        return self.last_id

    # -- valid messages --------------------------------------------------------------

    def valid(self) -> dict[str, Any]:
        rng = self.rng
        position = {"line": rng.randrange(3), "character": rng.randrange(5)}
        range_ = {"start": position, "end": position}
        requests: list[tuple[str, Any]] = [
            ("crank/state", {}),
            ("crank/sessions", {}),
            ("crank/models", {}),
            ("crank/systemPrompt", {}),
            ("crank/tree", {}),
            ("crank/messages", {}),
            ("crank/clearQueue", {}),
            ("crank/steer", {"text": "s"}),
            ("crank/followUp", {"text": "f"}),
            ("crank/removeQueued", {"queue": "steering", "index": 0}),
            ("crank/setPermissionMode", {"mode": rng.choice(["ask", "readOnly", "autoEdit"])}),
            ("crank/branch", {"entryId": "nope"}),
            ("crank/openSession", {"sessionId": "nope"}),
            ("crank/state", {"workspace": self.project}),
            ("crank/nothing", {}),
            ("initialize", init_params(Path("/tmp"))),
            (
                "textDocument/codeAction",
                {
                    "textDocument": {"uri": self.doc},
                    "range": range_,
                    "context": {"diagnostics": []},
                },
            ),
            ("textDocument/hover", {"textDocument": {"uri": self.doc}, "position": position}),
            ("workspace/executeCommand", {"command": "crank.nothing", "arguments": []}),
            ("workspace/executeCommand", {"command": "crank.fixFile", "arguments": [{"uri": 5}]}),
        ]
        if rng.random() < 0.01:
            requests.append(("crank/prompt", {"text": "hello", "whileRunning": "reject"}))
        notifications: list[tuple[str, Any]] = [
            (
                "textDocument/didOpen",
                {
                    "textDocument": {
                        "uri": self.doc,
                        "languageId": "python",
                        "version": 1,
                        "text": "x = 1\n",
                    }
                },
            ),
            (
                "textDocument/didChange",
                {
                    "textDocument": {"uri": self.doc, "version": 2},
                    "contentChanges": [{"range": range_, "text": "y"}],
                },
            ),
            ("textDocument/didClose", {"textDocument": {"uri": self.doc}}),
            ("$/cancelRequest", {"id": self.last_id}),
            ("workspace/didChangeConfiguration", {"settings": {}}),
            ("initialized", {}),
            ("$/setTrace", {"value": "off"}),
            ("crank/unknownNotification", {}),
        ]
        if rng.random() < 0.6:
            method, params = rng.choice(requests)
            return {"jsonrpc": "2.0", "id": self.fresh_id(), "method": method, "params": params}
        method, params = rng.choice(notifications)
        return {"jsonrpc": "2.0", "method": method, "params": params}

    def junk(self, depth: int = 0) -> Any:
        rng = self.rng
        choice = rng.randrange(9 if depth < 3 else 6)
        if choice == 0:
            return None
        if choice == 1:
            return rng.choice([True, False])
        if choice == 2:
            return rng.choice([0, -1, 7, 2**31, 10**30, 1.5, -0.0, 1e300])
        if choice in (3, 4, 5):
            return "".join(rng.choice('ab:/é{}"\\ ') for _ in range(rng.randrange(6)))
        if choice in (6, 7):
            return [self.junk(depth + 1) for _ in range(rng.randrange(3))]
        return {rng.choice("abtxy"): self.junk(depth + 1) for _ in range(rng.randrange(3))}

    def nested(self) -> Any:
        depth = self.rng.choice([101, 150, 400, 800])  # deeper: tests/lsp/test_frames.py
        value: Any = 0
        for _ in range(depth):
            value = [value] if self.rng.random() < 0.5 else {"a": value}
        return value

    # -- mutations -------------------------------------------------------------------

    def mutated(self) -> Any:
        rng = self.rng
        message = self.valid()
        kind = rng.randrange(12)
        if kind == 0 and len(message) > 1:
            del message[rng.choice([k for k in message if k != "id"] or ["jsonrpc"])]
        elif kind == 1:
            message["jsonrpc"] = rng.choice(["1.0", 2, None, "2.0 ", "", "2"])
        elif kind == 2:
            message["method"] = rng.choice([None, 5, [], "", "crank/", "CRANK/STATE", "$/x"])
        elif kind == 3:
            message["id"] = rng.choice([None, True, 1.5, {"a": 1}, [1], ""])
            if message["id"] == "":
                message["id"] = self.fresh_id()
        elif kind == 4:
            message["params"] = self.junk()
        elif kind == 5 and isinstance(message.get("params"), dict) and message["params"]:
            key = rng.choice(list(message["params"]))
            message["params"][key] = self.junk()
        elif kind == 6:
            message["params"] = {"deep": self.nested()}
        elif kind == 7:
            if "id" not in message:
                message["id"] = self.fresh_id()  # a notification method with an id
            else:
                del message["id"]  # a request method without one
        elif kind == 8:
            return [
                self.valid() if rng.random() < 0.8 else self.junk() for _ in range(rng.randrange(4))
            ]
        elif kind == 9:
            return self.junk()
        elif kind == 10:
            answer: dict[str, Any] = {"jsonrpc": "2.0", "id": self.fresh_id()}
            answer[rng.choice(["result", "error"])] = self.junk()
            return answer
        else:
            message[rng.choice("xyz")] = self.junk()
        return message

    # -- frames ----------------------------------------------------------------------

    def frame(self, plan: Plan) -> bytes:
        rng = self.rng
        value = self.valid() if rng.random() < 0.35 else self.mutated()
        body = json.dumps(value, ensure_ascii=rng.random() < 0.5).encode()
        ids = readable_ids(value)
        roll = rng.random()
        if roll < 0.06:  # damage the body: it may no longer be readable
            body = self.damage(body)
            plan.at_most_once += ids
            plan.damaged += body + b"\n"
            return frame(body)
        if roll < 0.16:  # a framing that must be refused
            plan.at_most_once += ids
            return self.bad_framing(body)
        if roll < 0.22:  # garbage between frames, then the frame
            plan.exactly_once += ids
            junk = bytes(rng.choice(b"xyz{}:\r\n \t\x00\xff-") for _ in range(rng.randrange(1, 40)))
            return junk + frame(body)
        plan.exactly_once += ids
        return self.tolerated_framing(body)

    def damage(self, body: bytes) -> bytes:
        rng = self.rng
        data = bytearray(body)
        choice = rng.randrange(5)
        if choice == 0 and data:
            return bytes(data[: rng.randrange(len(data))])
        if choice == 1 and data:
            data[rng.randrange(len(data))] = rng.choice(b'\xff\xc3{}[]",:\\ ')
        elif choice == 2:
            data[rng.randrange(len(data) + 1) : 0] = rng.choice(
                [b"NaN", b"\xc3\x28", b"\x00", b"}"]
            )
        elif choice == 3:
            return b"\xef\xbb\xbf" + bytes(data)
        else:
            return bytes(data) + b" trailing"
        return bytes(data)

    def tolerated_framing(self, body: bytes) -> bytes:
        header = self.rng.choice(
            [
                b"Content-Length: %d\r\n\r\n",
                b"Content-Length: %d\r\n\r\n",
                b"content-length: %d\r\n\r\n",
                b"Content-Length: %d\n\n",
                b"Content-Length:   %d  \r\n\r\n",
                b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: %d\r\n\r\n",
                b"Content-Length: %d\r\nContent-Length: %d\r\n\r\n",
                b"\r\nContent-Length: %d\r\n\r\n",
            ]
        )
        return header % ((len(body),) * header.count(b"%d")) + body

    def bad_framing(self, body: bytes) -> bytes:
        rng = self.rng
        size = len(body)
        header = rng.choice(
            [
                b"Content-Length: abc\r\n\r\n",
                b"Content-Length: -%d\r\n\r\n" % size,
                b"Content-Length: %d\r\nContent-Length: %d\r\n\r\n" % (size, size + 1),
                b"Content-Length: %d\r\n\r\n" % max(0, size - rng.randrange(1, 30)),
                b"Content-Length: %d\r\n\r\n" % (size + rng.randrange(1, 40)),
                b"Content-Length: 99999999999999\r\n\r\n",
                b"Content-Type: x\r\n\r\n",
                b"",
            ]
        )
        return header + body


async def send_all(wire: Wire, generator: Generator, plan: Plan) -> None:
    batch: list[bytes] = []
    for _ in range(FRAMES):
        batch.append(generator.frame(plan))
        plan.stream.append(batch[-1])
        plan.frames += 1
        if len(batch) == 200:
            wire.send(b"".join(batch))
            batch.clear()
            await wire.drain()
    wire.send(b"".join(batch))
    await wire.drain()


async def test_ten_thousand_hostile_frames(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "a.py").write_text("x = 1\n")
    env = server_env(tmp_path)
    env["OPENAI_API_KEY"], env["ANTHROPIC_API_KEY"] = KEYS[1], KEYS[2]
    wire = await spawn(tmp_path, env=env)
    crank = {
        "provider": {
            "api": "openai",
            "baseUrl": "http://127.0.0.1:9/v1",
            "model": "fuzz",
            "apiKey": KEYS[0],
            "maxRetries": 0,
        }
    }
    wire.send(request("init", "initialize", init_params(project, crank)))
    assert "result" in await wire.answer("init")
    wire.send(notification("initialized", {}))

    rng = random.Random(SEED)
    plan = Plan()
    generator = Generator(rng, project)
    await send_all(wire, generator, plan)
    wire.send(request("final", "crank/state", {}))
    final = await wire.answer("final", within=120)
    dump = tmp_path / "stream.bin"
    dump.write_bytes(b"".join(plan.stream))
    where = f"(seed {SEED}, {plan.frames} frames, sent bytes in {dump})"
    assert "result" in final, f"the server no longer answers a valid request {where}: {final}"

    async def all_answered() -> None:
        while missing := [i for i in plan.exactly_once if i not in wire.answers]:
            await wire.answer(missing[0], within=120)

    await all_answered()
    assert await wire.close() == 0, where

    assert plan.frames >= 10_000 or FRAMES < 10_000
    sent = set(map(json.dumps, plan.exactly_once + plan.at_most_once + ["init", "final"]))
    stray = [
        i
        for i in wire.answers
        if json.dumps(i) not in sent and json.dumps(i).encode() not in plan.damaged
    ]
    assert stray == [], (
        f"answers to ids never sent {where}: {[(i, wire.answers[i]) for i in stray[:3]]}"
    )
    twice = {i: a for i, a in wire.answers.items() if len(a) > 1}
    assert twice == {}, f"ids answered more than once {where}: {list(twice.items())[:3]}"
    assert len(plan.exactly_once) > FRAMES // 4, where
    output = bytes(wire.stdout) + bytes(wire.stderr)
    for key in KEYS:
        assert key.encode() not in output, f"a provider key reached the output {where}"
