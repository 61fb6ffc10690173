"""The LSP base protocol's framing, as a parser that never stalls and never loses a
well-formed frame.

A frame is a header block (lines ``Name: value``, ending with an empty line) followed
by exactly ``Content-Length`` bytes of body. The parser is sans-IO: ``feed(bytes)``
returns what became complete, ``end()`` what was left when the input closed. It decides
nothing about JSON; ``frames.py`` does that with the bodies.

What is tolerated, because real clients differ (docs/protocol.md "Framing"):
header names in any case, spaces or tabs around names and values, lines ending in LF
alone, other headers (``Content-Type`` included; bodies are always UTF-8), the same
``Content-Length`` twice, and empty lines or whitespace between frames.

What is refused (one ``Refused`` each, which the caller answers with -32700):
a ``Content-Length`` that is not a plain decimal number (``abc``, ``-5``, ``+5``,
``5.0``), larger than ``MAX_BODY``, or given twice with different values; a header
block with no ``Content-Length``; a header line with no colon or a name that is not an
HTTP token; a header line or block longer than ``MAX_HEADER``; a ``Content-Length``
larger than its body, which shows as the next frame's header arriving inside it.

After a refusal, and for any bytes between frames that are not a header (the rest of a
body whose ``Content-Length`` was too small, stray output), the parser skips to the
next ``Content-Length`` header, wherever it starts, even glued to the end of the bytes
before it. A valid JSON body can never contain such a header (JSON strings cannot hold
a raw line break), so skipping never eats into a well-formed frame.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from crank.agent import wiretext

MAX_BODY = 64 * 1024 * 1024
"""The largest body accepted (64 MiB: a very large file opened in the editor)."""
MAX_HEADER = 8 * 1024
"""The longest header block accepted; real ones are under 100 bytes."""

_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_NUMBER = re.compile(rb"[0-9]+")
_LENGTH_NAME = b"content-length"
_DASH_LENGTH = re.compile(rb"-[Ll][Ee][Nn][Gg][Tt][Hh]")
_HEADER_IN_BODY = re.compile(rb"content-length[ \t]*:[ \t]*[0-9]+[ \t]*\r?\n", re.IGNORECASE)
_WHITESPACE = b" \t\r\n"
_LEADING_WHITESPACE = re.compile(rb"[ \t\r\n]*")


def _prefix_pattern() -> re.Pattern[bytes]:
    """Any proper start of a Content-Length header line, at the end of the input."""
    steps = [re.escape(bytes([c])) for c in _LENGTH_NAME] + [rb"[ \t]*:", rb"[ \t]*[0-9]*[ \t]*\r?"]
    pattern = b""
    for step in reversed(steps[1:]):
        pattern = b"(?:" + step + pattern + b")?"
    return re.compile(steps[0] + pattern + rb"\Z", re.IGNORECASE)


_HEADER_PREFIX_AT_END = _prefix_pattern()


def frame(payload: dict[str, Any]) -> bytes:
    """One message as a frame: compact UTF-8 JSON after its ``Content-Length`` header.
    Every message Crank writes goes through here: its notifications, and its answers
    to requests whose result is plain JSON (``pygls_adapter.PlainAnswers``); pygls
    frames only the answers that hold lsprotocol types and the errors. A lone surrogate
    in any string is written as its escape (``crank.agent.wiretext``), never raised."""
    return framed(wiretext.dumps_compact(payload))


def framed(body: bytes) -> bytes:
    """A body already encoded, after its ``Content-Length`` header."""
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


@dataclass(frozen=True)
class Frame:
    """A complete body, exactly as many bytes as its header said."""

    body: bytes


@dataclass(frozen=True)
class Refused:
    """A frame that could not be delimited; ``reason`` names what was wrong.
    ``body`` holds the bytes of a body that was cut short by the next header (its
    Content-Length was too large), so the caller can still read its id."""

    reason: str
    body: bytes | None = None


@dataclass(frozen=True)
class Skipped:
    """Bytes between frames that are not a header, skipped up to the next header."""

    count: int
    preview: bytes


Event = Frame | Refused | Skipped


class FrameParser:
    """Feed it bytes as they arrive; it returns frames, refusals and skips in order."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._length: int | None = None
        """The body length of the frame being read, once its header block is complete."""
        self._body_scanned = 0
        """How far the pending body has been checked for a header arriving inside it."""
        self._skipping = False
        """Looking for the next header: after a refusal, or after bytes that are not one."""
        self._quiet = False
        """The bytes being skipped belong to a frame already refused (not reported again)."""
        self._skipped = 0
        self._preview = b""
        self._ending = False

    def feed(self, data: bytes) -> list[Event]:
        self._buffer += data
        events: list[Event] = []
        while self._step(events):
            pass
        return events

    def end(self) -> list[Event]:
        """The input closed: report what was left unfinished."""
        events: list[Event] = []
        self._ending = True
        while self._step(events):
            pass
        if self._length is not None:
            events.append(
                Refused(
                    f"the input ended inside a frame ({len(self._buffer)} of "
                    f"{self._length} body bytes)"
                )
            )
        elif self._buffer.strip(_WHITESPACE):
            if self._skipping:
                self._skip(len(self._buffer))
            else:
                events.append(Refused("the input ended inside a frame's header"))
        self._flush_skip(events)
        self._buffer.clear()
        self._length = None
        self._skipping = self._quiet = self._ending = False
        return events

    def _step(self, events: list[Event]) -> bool:
        """One step; True when it made progress and should be called again."""
        if self._length is not None:
            return self._read_body(events)
        if self._skipping:
            return self._seek_header()
        return self._read_header(events)

    # -- bodies ----------------------------------------------------------------------

    def _read_body(self, events: list[Event]) -> bool:
        length = self._length
        assert length is not None
        window = min(len(self._buffer), length)
        cut = self._header_inside(window)
        if cut is not None:
            body = bytes(self._buffer[:cut])
            del self._buffer[:cut]
            self._length = None
            events.append(
                Refused(
                    f"Content-Length {length} is larger than the body: the next frame's "
                    f"header starts after {cut} bytes",
                    body,
                )
            )
            return True
        if len(self._buffer) < length:
            return False
        if not self._ending and self._header_may_start_inside(length):
            return False  # only a body that is not JSON can end like a header's start
        body = bytes(self._buffer[:length])
        del self._buffer[:length]
        self._length = None
        events.append(Frame(body))
        return True

    def _header_inside(self, window: int) -> int | None:
        """The offset of a Content-Length header line that starts inside the first
        ``window`` bytes of the pending body (it may end after them). Only new bytes are
        searched, with an overlap for a header split across two reads."""
        start = max(0, self._body_scanned - MAX_HEADER)
        self._body_scanned = window
        limit = min(len(self._buffer), window + len(_LENGTH_NAME) - 1)
        # Find "-length" fast, then check "content" before it (any case).
        while (dash := _DASH_LENGTH.search(self._buffer, start + 7, limit)) is not None:
            name = dash.start() - 7
            if (
                bytes(self._buffer[name : dash.start()]).lower() == b"content"
                and _HEADER_IN_BODY.match(self._buffer, name) is not None
            ):
                return name
            start = name + 1
        return None

    def _header_may_start_inside(self, length: int) -> bool:
        """Whether the buffer ends inside what may be a header line that began inside
        the body: then wait for the rest before delivering the body."""
        last_line = self._buffer.rfind(b"\n") + 1  # a header's start runs to the end
        if last_line >= length or len(self._buffer) - length >= MAX_HEADER:
            return False
        start = max(last_line, len(self._buffer) - MAX_HEADER)
        found = _HEADER_PREFIX_AT_END.search(self._buffer, start)
        return found is not None and found.start() < length

    # -- headers ---------------------------------------------------------------------

    def _read_header(self, events: list[Event]) -> bool:
        leading = _LEADING_WHITESPACE.match(self._buffer).end()  # type: ignore[union-attr]
        if leading:  # whitespace between frames is tolerated
            del self._buffer[:leading]
        if not self._buffer:
            return False
        position = 0
        length: int | None = None
        while True:
            line_end = self._buffer.find(b"\n", position)
            if line_end < 0:
                if position == 0 and not _could_be_header(bytes(self._buffer)):
                    return self._start_skipping(1)
                if len(self._buffer) > MAX_HEADER:
                    return self._refuse(events, 0, _TOO_LONG)
                return False
            if line_end > MAX_HEADER:
                return self._refuse(events, 0, _TOO_LONG)
            line = bytes(self._buffer[position:line_end]).rstrip(b"\r")
            if not line.strip(b" \t"):
                if length is None:  # a header may be glued inside one of its lines
                    return self._refuse(events, 0, "a header block without Content-Length")
                break
            name, colon, value = line.partition(b":")
            name = name.strip(b" \t")
            if not colon or _TOKEN.fullmatch(name) is None:
                if position == 0:
                    return self._start_skipping(1)
                return self._refuse(
                    events, position, f"the header line {_show(line)} is not Name: value"
                )
            if name.lower() == _LENGTH_NAME:
                value = value.strip(b" \t")
                if _NUMBER.fullmatch(value) is None:
                    return self._refuse(
                        events,
                        position,
                        f"Content-Length {_show(value)} is not a decimal byte count",
                    )
                number = int(value) if len(value) <= 20 else MAX_BODY + 1
                if number > MAX_BODY:
                    return self._refuse(
                        events,
                        position,
                        f"Content-Length {number} is larger than the limit ({MAX_BODY})",
                    )
                if length is not None and number != length:
                    return self._refuse(
                        events,
                        position,
                        f"two different Content-Length headers ({length} and {number})",
                    )
                length = number
            position = line_end + 1
        del self._buffer[: line_end + 1]
        self._flush_skip(events)
        self._quiet = False
        self._length = length
        self._body_scanned = 0
        return True

    # -- refusing and skipping -------------------------------------------------------

    def _refuse(self, events: list[Event], line_start: int, reason: str) -> bool:
        """Refuse the header block at the front. Resynchronise on the next header after
        the first byte of the line that was wrong (of the block, when no one line was):
        a header glued to the end of that line is found, the rest of the refused block
        and its body are skipped."""
        self._flush_skip(events)
        events.append(Refused(reason))
        self._quiet = True
        return self._start_skipping(line_start + 1)

    def _start_skipping(self, after: int) -> bool:
        self._skip(after)
        del self._buffer[:after]
        self._skipping = True
        return True

    def _seek_header(self) -> bool:
        start = _find_header_start(self._buffer)
        if start < 0:
            # Keep a tail that could be the start of a header split across reads.
            cut = max(0, len(self._buffer) - (len(_LENGTH_NAME) - 1))
            self._skip(cut)
            del self._buffer[:cut]
            return False
        self._skip(start)
        del self._buffer[:start]
        self._skipping = False
        return True

    def _skip(self, count: int) -> None:
        if self._quiet or not count:
            return
        room = 40 - len(self._preview)
        if room > 0:
            self._preview += bytes(self._buffer[: min(count, room)])
        self._skipped += count

    def _flush_skip(self, events: list[Event]) -> None:
        if self._skipped:
            events.append(Skipped(self._skipped, self._preview))
            self._skipped = 0
            self._preview = b""


_TOO_LONG = f"the header block is longer than {MAX_HEADER} bytes"


def _find_header_start(data: bytearray) -> int:
    """Where the next ``Content-Length`` name starts (any case), or -1."""
    return bytes(data).lower().find(_LENGTH_NAME)


def _could_be_header(start: bytes) -> bool:
    """Whether a first line still without its end could become a header line."""
    name, _, _ = start.partition(b":")
    stripped = name.strip(b" \t")
    return not stripped or _TOKEN.fullmatch(stripped) is not None


def _show(value: bytes) -> str:
    text = value[:60].decode("utf-8", "replace")
    return repr(text + ("..." if len(value) > 60 else ""))
