"""Answer ``initialize`` before pygls is imported.

An editor waits for the ``initialize`` answer before it shows the server as running;
importing pygls takes about 340 ms here, most of it lsprotocol building every LSP type.
The answer needs none of that (``capabilities.py`` writes it), so ``crank serve`` on
stdio first reads until a frame is complete, answers it when it is a well-formed
``initialize`` whose params fit lsprotocol's shape (``shape.py``), and only then
imports the full server. What was read is handed over whole (``Start``): the full
server replays every event through ``frames.Inbox`` in order, the ``initialize``
included (pygls sets up its workspace and our handler reads the client's
capabilities from it), and the one answer it would write again is dropped
(``serve.WithoutEarlyAnswer``), so every request is still answered exactly once.

Anything else first (a malformed frame, another method, params that do not fit, or
no input at all) is left to the full server, which answers it as it always did.
Nothing here imports pygls or lsprotocol (tests/lsp/test_startup.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from crank.agent import wiretext

from .bodies import Undecodable, decode, valid_id
from .capabilities import initialize_result
from .framing import Event, Frame, FrameParser, framed
from .shape import fits, initialize_shape

Read = Callable[[], bytes]
Write = Callable[[bytes], None]


@dataclass
class Start:
    """What was read before the full server took over, and what was answered.

    Contract: ``events`` are every event the parser delimited so far, in order, the
    first frame included; ``parser`` holds the bytes after them; ``ended`` is True when
    the input already closed (nothing more is to be read). ``answered`` is the id of
    the ``initialize`` answered early, with ``answer`` the message sent, or both None.
    """

    parser: FrameParser
    events: list[Event] = field(default_factory=list)
    ended: bool = False
    answered: Any = None
    answer: dict[str, Any] | None = None


def read_start(read: Read, write: Write) -> Start:
    """Read until the first event is delimited (or the input ends), and answer it
    when it is an ``initialize`` this module can answer."""
    start = Start(FrameParser())
    while not start.events:
        chunk = read()
        if not chunk:
            start.events.extend(start.parser.end())
            start.ended = True
            return start
        start.events.extend(start.parser.feed(chunk))
    first = start.events[0]
    answer = early_answer(first.body) if isinstance(first, Frame) else None
    if answer is not None:
        # The standard library's encoder: importing the C one (``frame``) would cost
        # more than this answer.
        write(framed(wiretext.dumps(answer, separators=(",", ":"))))
        start.answered, start.answer = answer["id"], answer
    return start


def early_answer(body: bytes) -> dict[str, Any] | None:
    """The answer to ``body`` when it is a well-formed ``initialize``, else None (the
    full server decides)."""
    try:
        message = decode(body)
    except Undecodable:
        return None
    if not (
        isinstance(message, dict)
        and message.get("jsonrpc") == "2.0"
        and message.get("method") == "initialize"
        and "id" in message
        and valid_id(message["id"])
        and isinstance(message.get("params"), dict)
        and fits(initialize_shape(), message["params"])
    ):
        return None
    result = initialize_result(message["params"])
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}
