"""Every class of hostile frame, sent to a real ``crank serve`` over stdio: each request
with a readable id gets exactly one answer with the right code, the server goes on
answering, and a refused frame prints one line on stderr, without a traceback.
Each of these went unanswered (or bricked the server) before crank.lsp.frames."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from .wire import Wire, frame, init_params, notification, request, spawn, started

STATE = "crank/state"


async def still_answers(wire: Wire, msg_id: Any = "alive") -> None:
    wire.send(request(msg_id, STATE, {}))
    answer = await wire.answer(msg_id)
    assert "result" in answer, answer


def message(**fields: Any) -> bytes:
    return frame(json.dumps(fields).encode())


async def test_batches_are_answered_element_by_element(tmp_path: Path) -> None:
    wire = await started(tmp_path)
    wire.send(
        frame(
            json.dumps(
                [
                    {"jsonrpc": "2.0", "id": 1, "method": STATE},
                    {"jsonrpc": "2.0", "method": "initialized"},
                    {"jsonrpc": "2.0", "id": "two", "method": STATE},
                    5,
                ]
            ).encode()
        )
    )
    assert (await wire.error(1))["code"] == -32600
    assert (await wire.error("two"))["code"] == -32600
    batch = next(m for m in wire.messages if isinstance(m, list))
    assert [item["id"] for item in batch] == [1, "two", None]
    wire.send(frame(b"[]"))
    await still_answers(wire)
    assert any(a["error"]["code"] == -32600 for a in wire.null_answers)
    assert await wire.close() == 0


@pytest.mark.parametrize("version", ["1.0", 2, None, "2.0 ", "absent"])
async def test_a_wrong_or_missing_jsonrpc_is_refused_with_the_id(
    tmp_path: Path, version: Any
) -> None:
    wire = await started(tmp_path)
    fields: dict[str, Any] = {"id": 7, "method": STATE, "params": {}}
    if version != "absent":
        fields["jsonrpc"] = version
    wire.send(message(**fields))
    error = await wire.error(7)
    assert error["code"] == -32600 and "jsonrpc" in error["message"]
    await still_answers(wire)
    assert await wire.close() == 0


async def test_invalid_requests_get_minus_32600(tmp_path: Path) -> None:
    wire = await started(tmp_path)
    wire.send(message(jsonrpc="2.0", id=1, method=None))
    assert "method" in (await wire.error(1))["message"]
    wire.send(message(jsonrpc="2.0", id=2, method=5))
    assert (await wire.error(2))["code"] == -32600
    wire.send(message(jsonrpc="2.0", id=3))
    assert (await wire.error(3))["code"] == -32600
    for value in ('"text"', "5", "null"):
        wire.send(frame(value.encode()))
    wire.send(message(jsonrpc="2.0", id={"an": "object"}, method=STATE))
    wire.send(message(jsonrpc="2.0", id=1.5, method=STATE))
    wire.send(message(jsonrpc="2.0", id=True, method=STATE))
    wire.send(message(jsonrpc="2.0", id=4, method=STATE, params=5))
    error = await wire.error(4)
    assert error["code"] == -32602 and "params" in error["message"]
    await still_answers(wire)
    refused = [a["error"]["code"] for a in wire.null_answers]
    assert refused.count(-32600) == 6
    assert await wire.close() == 0


async def test_notification_methods_sent_with_an_id_are_refused(tmp_path: Path) -> None:
    wire = await started(tmp_path)
    doc = {"uri": (tmp_path / "p" / "a.py").as_uri(), "languageId": "python", "version": 1}
    for msg_id, method, params in [
        (1, "initialized", {}),
        (2, "textDocument/didOpen", {"textDocument": {**doc, "text": "x"}}),
        (3, "$/cancelRequest", {"id": 1}),
        (4, "exit", None),
    ]:
        wire.send(request(msg_id, method, params))
        error = await wire.error(msg_id)
        assert error["code"] == -32600 and "notification" in error["message"]
    await still_answers(wire)
    assert await wire.close() == 0


async def test_request_methods_sent_without_an_id_are_not_run(tmp_path: Path) -> None:
    wire = await started(tmp_path)
    wire.send(notification("crank/setPermissionMode", {"mode": "readOnly"}))
    wire.send(notification("shutdown"))
    wire.send(request(1, STATE, {}))
    state = (await wire.answer(1))["result"]
    assert state["permissionMode"] != "readOnly"  # neither was run
    assert await wire.close() == 0
    assert wire.stderr.decode().count("sent without an id") == 2


async def test_standard_requests_whose_params_do_not_fit(tmp_path: Path) -> None:
    wire = await started(tmp_path)
    wire.send(request(1, "textDocument/codeAction", {}))
    error = await wire.error(1)
    assert error["code"] == -32602 and "textDocument" in error["message"]
    assert "context" in error["message"]
    wire.send(request(2, "textDocument/hover", {}))
    assert (await wire.error(2))["code"] == -32601  # Crank offers no hover
    wire.send(request(3, "workspace/executeCommand", {"command": "crank.fixFile", "arguments": 5}))
    error = await wire.error(3)
    assert error["code"] == -32602 and "arguments" in error["message"]
    wire.send(request(4, "workspace/executeCommand", {"command": "crank.nothing"}))
    assert (await wire.error(4))["code"] == -32602
    wire.send(request(5, "workspace/executeCommand", {}))
    assert "command" in (await wire.error(5))["message"]
    await still_answers(wire)
    assert await wire.close() == 0


async def test_deep_nesting_is_refused_with_the_id(tmp_path: Path) -> None:
    wire = await started(tmp_path)
    for msg_id, depth in ((1, 1000), (2, 150), (3, 100_000)):
        deep = "[" * depth + "]" * depth
        body = f'{{"jsonrpc":"2.0","id":{msg_id},"method":"crank/state","params":{{"x":{deep}}}}}'
        wire.send(frame(body.encode()))
        error = await wire.error(msg_id)
        assert error["code"] == -32600 and "deeper" in error["message"]
    # The id read even when it comes after the deep part.
    deep = "[" * 5000 + "]" * 5000
    wire.send(frame(f'{{"jsonrpc":"2.0","params":{deep},"id":"late","method":"x"}}'.encode()))
    assert (await wire.error("late"))["code"] == -32600
    await still_answers(wire)
    assert await wire.close() == 0


async def test_bodies_that_are_not_json(tmp_path: Path) -> None:
    wire = await started(tmp_path)
    for body in (b"{not json", b"\xff\xfe{}", b'{"jsonrpc":"2.0","id":1,"x":NaN}', b"1" * 5000):
        wire.send(frame(body))
    await still_answers(wire)
    assert [a["error"]["code"] for a in wire.null_answers] == [-32700] * 4
    assert 1 not in wire.answers
    assert await wire.close() == 0


async def test_lifecycle_order(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    wire = await spawn(tmp_path)
    wire.send(request(1, "shutdown"))
    error = await wire.error(1)
    assert error["code"] == -32002 and "initialize" in error["message"]
    wire.send(request(2, STATE, {}))
    assert (await wire.error(2))["code"] == -32002
    wire.send(request(3, "initialize", {"capabilities": 5}))
    error = await wire.error(3)
    assert error["code"] == -32602 and "capabilities" in error["message"]
    wire.send(request(4, "initialize", init_params(project)))
    assert (await wire.answer(4))["result"]["serverInfo"]["name"] == "crank"
    wire.send(request(5, "initialize", init_params(project)))
    error = await wire.error(5)
    assert error["code"] == -32600 and "already" in error["message"]
    wire.send(notification("initialized", {}))
    await still_answers(wire)
    wire.send(request(6, "shutdown"))
    assert (await wire.answer(6))["result"] is None
    wire.send(request(7, STATE, {}))
    assert (await wire.error(7))["code"] == -32600
    wire.send(notification("exit"))
    assert await wire.wait_exit() == 0
    assert all(len(answers) == 1 for answers in wire.answers.values())


@pytest.mark.parametrize(
    "bad",
    [
        b"content-length: %d\r\n\r\n",
        b"Content-Length: %d\n\n",
        b"Content-Length:   %d   \r\n\r\n",
        b"CONTENT-LENGTH: %d\nContent-Type: application/vscode-jsonrpc\n\n",
    ],
)
async def test_tolerated_framing(tmp_path: Path, bad: bytes) -> None:
    wire = await started(tmp_path)
    body = json.dumps({"jsonrpc": "2.0", "id": "odd", "method": STATE, "params": {}}).encode()
    wire.send(bad % len(body) + body)
    assert "result" in await wire.answer("odd")
    await still_answers(wire)
    assert await wire.close() == 0


@pytest.mark.parametrize(
    "header",
    [
        b"Content-Length: 10\r\nContent-Length: 12\r\n\r\n",
        b"Content-Length: abc\r\n\r\n",
        b"Content-Length: -5\r\n\r\n",
        b"Content-Length: 9999999999999\r\n\r\n",
        b"Content-Length: 20\r\n\r\n",
        b"Content-Length: 900\r\n\r\n",
        b"Content-Length: %d\r\n\r\n",
        b"Content-Type: text/plain\r\n\r\n",
        b"",
    ],
)
async def test_refused_framing_costs_nothing_after_it(tmp_path: Path, header: bytes) -> None:
    wire = await started(tmp_path)
    body = json.dumps({"jsonrpc": "2.0", "id": "bad", "method": STATE, "params": {}}).encode()
    if b"%d" in header:
        header = header % (len(body) + 3)  # just too large: the next header starts inside
    wire.send(header + body)
    await still_answers(wire)  # no stray CRLF needed
    assert len(wire.answers.get("bad", [])) <= 1
    assert await wire.close() == 0
    lines = [line for line in wire.stderr.decode().splitlines() if line.strip()]
    assert len(lines) in (1, 2), lines  # a too-small length also reports the skipped rest
    assert "Traceback" not in wire.stderr.decode()


async def test_a_malformed_frame_is_one_line_on_stderr(tmp_path: Path) -> None:
    wire = await started(tmp_path)
    wire.send(frame(b"{not json"))
    await still_answers(wire)
    assert await wire.close() == 0
    lines = wire.stderr.decode().splitlines()
    assert len(lines) == 1 and "not JSON" in lines[0], lines


async def test_a_malformed_frame_has_its_traceback_at_debug(tmp_path: Path) -> None:
    wire = await spawn_debug(tmp_path)
    wire.send(frame(b'{"jsonrpc":"2.0","id":1,"method":"textDocument/codeAction","params":{}}'))
    assert (await wire.error(1))["code"] == -32602
    assert await wire.close() == 0
    assert "refused a message" in wire.stderr.decode() and "Traceback" in wire.stderr.decode()


async def spawn_debug(tmp_path: Path) -> Wire:
    project = tmp_path / "p"
    project.mkdir(exist_ok=True)
    wire = await spawn(tmp_path, "--log-level", "DEBUG")
    wire.send(request("init", "initialize", init_params(project)))
    await wire.answer("init")
    wire.send(notification("initialized", {}))
    return wire


async def test_answers_to_nothing_we_asked_are_not_answered(tmp_path: Path) -> None:
    wire = await started(tmp_path)
    wire.send(message(jsonrpc="2.0", id="never-asked", result={"x": 1}))
    wire.send(message(jsonrpc="2.0", id="never-asked-2", error={"code": 1, "message": "x"}))
    await still_answers(wire)
    assert "never-asked" not in wire.answers and "never-asked-2" not in wire.answers
    assert await wire.close() == 0


async def test_serve_with_stdin_from_dev_null_exits(tmp_path: Path) -> None:
    wire = await spawn(tmp_path, stdin=asyncio.subprocess.DEVNULL)
    assert await wire.wait_exit() == 0
    assert b"Traceback" not in wire.stderr and b"PermissionError" not in wire.stderr


async def test_serve_with_stdin_from_a_file_answers_it(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    script = tmp_path / "input"
    script.write_bytes(
        request(1, "initialize", init_params(project))
        + notification("initialized", {})
        + request(2, "shutdown")
        + notification("exit")
    )
    with script.open("rb") as source:
        wire = await spawn(tmp_path, stdin=source)
        assert await wire.wait_exit() == 0
    assert set(wire.answers) == {1, 2}


async def test_a_folder_that_does_not_exist_is_ignored(tmp_path: Path) -> None:
    wire = await started(tmp_path)
    missing = (tmp_path / "not-there").as_uri()
    wire.send(
        notification(
            "workspace/didChangeWorkspaceFolders",
            {"event": {"added": [{"uri": missing, "name": "x"}], "removed": []}},
        )
    )
    await still_answers(wire)  # without `workspace`: still the one real folder
    wire.send(request(2, STATE, {"workspace": missing}))
    assert (await wire.error(2))["code"] == 1003
    assert await wire.close() == 0
    assert "not-there" in wire.stderr.decode() and "not a directory" in wire.stderr.decode()
