"""The early ``initialize`` answer (crank/lsp/early.py) against the full server.

The promise: the early path answers only what the full server (frames.Inbox, pygls,
lsprotocol) would accept, and answers it exactly as the full server does; everything
else it leaves alone. The full server here is the real one, in process, fed the same
frame through the same Inbox. Then, over stdio, the handover: what was read before the
full server existed is replayed in order and every request is answered exactly once.
That the answer comes before pygls is imported is tests/lsp/test_startup.py's job.
"""

from __future__ import annotations

import array
import asyncio
import fcntl
import json
import os
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pygls.capabilities import ServerCapabilitiesBuilder

from crank.lsp import early, shape, shape_of
from crank.lsp.frames import Inbox
from crank.lsp.framing import Frame
from crank.lsp.server import HANDLERS, build_server
from crank.lsp.shape import Shape

from .helpers import server_env
from .wire import Wire, init_params, notification, request, spawn

RECORDED = sorted((Path(__file__).parent / "initialize").glob("*.json"))


class Capture:
    """pygls's writer, keeping what the full server writes."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        self.messages.append(json.loads(data.partition(b"\r\n\r\n")[2]))

    def close(self) -> None:
        pass


def full_server_answer(body: bytes) -> tuple[dict[str, Any] | None, Any]:
    """What the full server answers to ``body`` as its first frame (None: nothing, as
    for a notification), and the position encoding pygls then keeps documents in
    (None when it did not initialize)."""

    async def run() -> tuple[dict[str, Any] | None, Any]:
        server = build_server()
        capture = Capture()
        server.protocol.set_writer(capture)
        Inbox(server.protocol, requests=HANDLERS).receive(Frame(body))
        for _ in range(20):  # the answer is written by a done callback
            if capture.messages:
                break
            await asyncio.sleep(0)
        assert len(capture.messages) <= 1, capture.messages
        if not capture.messages:
            return None, None
        encoding = None
        if "result" in capture.messages[0]:
            encoding = server.workspace.position_encoding
        return capture.messages[0], encoding

    return asyncio.run(run())


def body_of(params: Any, msg_id: Any = 1) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": msg_id, "method": "initialize", "params": params}
    ).encode()


def check_agrees(body: bytes) -> dict[str, Any] | None:
    """The early answer, after checking the full server says the same (or that the
    early path declined)."""
    fast = early.early_answer(body)
    slow, encoding = full_server_answer(body)
    if fast is not None:
        assert slow is not None and "result" in slow, f"answered early; the full server: {slow}"
        assert fast == slow
        assert fast["result"]["capabilities"]["positionEncoding"] == encoding
    return fast


def test_the_shape_file_is_drawn_from_the_installed_lsprotocol() -> None:
    assert shape.initialize_shape() == shape_of.initialize_shape(), (
        "lsprotocol's InitializeParams changed: run `python -m crank.lsp.shape_of`"
    )


@pytest.mark.parametrize("path", RECORDED, ids=[p.stem for p in RECORDED])
def test_real_clients_initialize_is_answered_early_and_the_same(path: Path) -> None:
    message = json.loads(path.read_text("utf-8"))
    assert check_agrees(json.dumps(message).encode()) is not None


@pytest.mark.parametrize(
    ("offered", "chosen"),
    [
        (None, "utf-16"),
        (["utf-8", "utf-16"], "utf-8"),
        (["utf-32"], "utf-32"),
        (["utf-7", "utf-16"], "utf-16"),
        (["utf-7"], "utf-16"),
        ([], "utf-16"),
    ],
)
def test_the_position_encoding_is_the_one_pygls_keeps(offered: Any, chosen: str) -> None:
    general = {} if offered is None else {"positionEncodings": offered}
    answer = check_agrees(body_of({"capabilities": {"general": general}}))
    assert answer is not None
    assert answer["result"]["capabilities"]["positionEncoding"] == chosen
    from lsprotocol import types

    caps = types.ClientCapabilities(
        general=types.GeneralClientCapabilities(position_encodings=offered)
    )
    assert ServerCapabilitiesBuilder.choose_position_encoding(caps) == chosen


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b'{"jsonrpc": "2.0", "id": 1, "method": "initialize"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": []}',
        b'{"jsonrpc": "1.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}',
        b'{"jsonrpc": "2.0", "id": true, "method": "initialize", "params": {"capabilities": {}}}',
        b'{"jsonrpc": "2.0", "method": "initialize", "params": {"capabilities": {}}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "shutdown"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": 5}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": '
        b'{"capabilities": {"textDocument": 5}}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": '
        b'{"capabilities": {}, "workspaceFolders": [{"uri": "file:///x"}]}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": '
        b'{"capabilities": {"window": {"workDoneProgress": "yes"}}}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": '
        b'{"capabilities": {}, "initializationOptions": ' + b"[" * 200 + b"]" * 200 + b"}}",
    ],
)
def test_what_the_early_path_leaves_to_the_full_server(body: bytes) -> None:
    assert early.early_answer(body) is None
    answer, _ = full_server_answer(body)  # at most one answer: full_server_answer checks
    is_notification = b'"id"' not in body and body.startswith(b"{")
    if is_notification:
        assert answer is None, "a notification is never answered"
    else:  # refused, or (params lsprotocol takes loosely, like "yes" for a bool) answered
        assert answer is not None, "a request is answered by the full server"


# -- generated params ----------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2)
    ),
    max_leaves=4,
)
STRINGS = st.sampled_from(["utf-8", "utf-16", "utf-32", "", "file:///w", "x"]) | st.text(max_size=4)


def values(the_shape: Shape, node: Any, junk: float, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values of a shape node; with probability ``junk`` at each node, any JSON at all."""
    right = _right(the_shape, node, junk, depth)
    if junk == 0:
        return right
    return st.floats(0, 1).flatmap(lambda roll: JSON if roll < junk else right)


def _right(the_shape: Shape, node: Any, junk: float, depth: int) -> st.SearchStrategy[Any]:
    if isinstance(node, str):
        return {
            "null": st.none(),
            "bool": st.booleans(),
            "int": st.integers(-(2**31), 2**31),
            "float": st.floats(-1e6, 1e6),
            "str": STRINGS,
            "any": JSON,
        }[node]
    kind, inner = node
    if kind == "enum":
        return st.sampled_from(inner)
    if kind == "union":
        options = [o for o in inner if depth < 6 or o == "null"] or inner
        return st.one_of([values(the_shape, o, junk, depth) for o in options])
    if kind == "list":
        return st.lists(values(the_shape, inner, junk, depth + 1), max_size=2)
    if kind == "map":
        return st.dictionaries(STRINGS, values(the_shape, inner, junk, depth + 1), max_size=2)
    spec = the_shape["classes"][inner]
    required = {k: values(the_shape, spec["fields"][k], junk, depth + 1) for k in spec["required"]}
    optional = sorted(k for k in spec["fields"] if k not in spec["required"])

    @st.composite
    def instance(draw: st.DrawFn) -> dict[str, Any]:
        chosen = (
            draw(st.lists(st.sampled_from(optional), max_size=3, unique=True)) if optional else []
        )
        value = {k: draw(s) for k, s in required.items()}
        for key in chosen:
            value[key] = draw(values(the_shape, spec["fields"][key], junk, depth + 1))
        return value

    return instance()


def params(junk: float) -> st.SearchStrategy[Any]:
    the_shape = shape.initialize_shape()
    return values(the_shape, the_shape["root"], junk)


EXAMPLES = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@EXAMPLES
@given(params(junk=0.0))
def test_params_that_fit_are_answered_early_and_the_same(value: dict[str, Any]) -> None:
    assert check_agrees(body_of(value)) is not None


@EXAMPLES
@given(params(junk=0.15))
def test_params_answered_early_are_params_the_full_server_accepts(value: Any) -> None:
    check_agrees(body_of(value))


# -- the handover, over stdio --------------------------------------------------------


async def opened_in_one_write(tmp_path: Path, *more: bytes) -> Wire:
    """A server sent initialize, initialized and ``crank/state`` (id 2) and ``more`` in
    a single write, as a client that does not wait may."""
    project = tmp_path / "p"
    project.mkdir()
    wire = await spawn(tmp_path)
    wire.send(
        request(1, "initialize", init_params(project))
        + notification("initialized", {})
        + request(2, "crank/state", {})
        + b"".join(more)
    )
    return wire


async def test_everything_sent_with_initialize_is_answered_once(tmp_path: Path) -> None:
    """The client writes initialize and what follows in one go: the early answer and
    the full server's replay must not answer initialize twice or drop the rest."""
    wire = await opened_in_one_write(tmp_path, request(3, "initialize", {"capabilities": {}}))
    assert "result" in await wire.answer(1)
    assert "result" in await wire.answer(2)
    assert (await wire.error(3))["code"] == -32600
    wire.send(request(4, "shutdown"))
    await wire.answer(4)
    assert await wire.close() == 0
    assert {k: len(v) for k, v in wire.answers.items()} == {1: 1, 2: 1, 3: 1, 4: 1}
    assert b"differs from the server's" not in wire.stderr


async def test_answers_are_written_when_the_client_closes_its_side_at_once(
    tmp_path: Path,
) -> None:
    """A client that sends its last requests and closes stdin still reads their
    answers: one each (on the old code the end of input cut the requests still being
    handled off without any). ``crank/state`` may be cancelled by ``shutdown``, as
    pygls does with requests in flight; that is its answer."""
    wire = await opened_in_one_write(tmp_path, request(3, "shutdown"))
    assert await wire.close() == 0
    assert {k: len(v) for k, v in wire.answers.items()} == {1: 1, 2: 1, 3: 1}
    assert "result" in wire.answers[3][0]


async def test_a_first_frame_the_early_path_declines_is_answered_by_the_full_server(
    tmp_path: Path,
) -> None:
    wire = await spawn(tmp_path)
    wire.send(request(1, "initialize", {"capabilities": {"textDocument": 5}}))
    error = await wire.error(1)
    assert error["code"] == -32602 and "capabilities.textDocument" in error["message"]
    wire.send(request(2, "initialize", {"capabilities": {}}))
    assert "result" in await wire.answer(2)
    assert await wire.close() == 0
    assert {k: len(v) for k, v in wire.answers.items()} == {1: 1, 2: 1}


def test_a_non_blocking_stdin_is_waited_on_not_fatal(tmp_path: Path) -> None:
    """An editor may hand over a pipe with O_NONBLOCK set (the flag is the pipe's, so
    the server's end has it too): the first read must wait for the rest of the frame,
    not die of EAGAIN. Deterministic: the body is written only once the server has
    taken the header out of the pipe, so its next read surely finds it empty."""
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    proc = subprocess.Popen(
        [sys.executable, "-m", "crank.lsp"],
        stdin=read_end,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(tmp_path),
    )
    guard = threading.Timer(300, proc.kill)  # a hang fails the test, never blocks it
    guard.start()
    try:
        body = body_of({"capabilities": {}})
        os.write(write_end, b"Content-Length: %d\r\n\r\n" % len(body))
        while _unread(read_end) and proc.poll() is None:
            time.sleep(0.01)  # waiting for the server to take the header, not timing it
        os.write(write_end, body)
        os.close(write_end)
        out, err = proc.communicate()
    finally:
        guard.cancel()
        proc.kill()
        os.close(read_end)
    assert proc.returncode == 0, err.decode()
    assert b'"result"' in out and b"BlockingIOError" not in err


def _unread(fd: int) -> int:
    """How many bytes wait in the pipe (FIONREAD)."""
    count = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, count)
    return count[0]
