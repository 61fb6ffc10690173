"""The JSON library under session files: every session-file read and write goes here.

Chosen on figures (``bench/json_libs.py``, docs/architecture.md). Reading uses
``msgspec``, which decodes our session lines 1.5-1.9 times as fast as the standard
library and gives the same objects, integers of any size included. ``orjson`` was
faster still (1.8-2.5x) but turns an integer beyond 64 bits into a float without a
word, which would change a record. Where msgspec refuses what the standard library
accepts (a lone surrogate escape such as ``\\udcff``, which the writer produces for
undecodable bytes a tool kept; ``NaN``; ``1e400``; UTF-16), the standard library reads
the line: the result is always the standard library's, only faster, and an error is
always the one the standard library raises, with its words. Without msgspec installed
everything still works, at stdlib speed.

Writing stays on the standard library: compact separators, ``ensure_ascii`` and no
``NaN``, so a line is ASCII and byte for byte what every earlier version wrote (the same
record gives the same line). Encoding is a small part of an append, whose cost is the
``fsync``.

Text that cannot be encoded follows the one rule of ``crank.agent.wiretext``: a lone
surrogate in a record (a file name's undecodable byte, a client's ``"\\ud800"``) is
written as its escape (``\\xff``), never as a lone surrogate escape, so nothing
written can make a line unreadable or poison what is later sent. Lines an earlier
version wrote are read as they are: one with a lone surrogate escape, or with bytes
that are not UTF-8, is read (strings escaped the same way), never refused.

Swapping the library is a change to this file only.
"""

from __future__ import annotations

import json
from typing import Any

from crank.agent import wiretext

try:
    import msgspec
except ImportError:  # pragma: no cover - msgspec is a dependency; this keeps a broken
    msgspec = None  # type: ignore[assignment]  # install readable, only slower

_decode = msgspec.json.Decoder().decode if msgspec is not None else None


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """One JSON document, decoded exactly as ``json.loads`` would; ``ValueError`` if bad."""
    if _decode is not None:
        try:
            return _decode(data)
        except msgspec.DecodeError:
            pass  # the standard library decides: it accepts more, and names the fault
    if isinstance(data, memoryview):
        data = data.tobytes()
    try:
        value = json.loads(data)
    except UnicodeDecodeError:
        if isinstance(data, str):
            raise
        # not UTF-8 (a line an earlier version let through): the bytes are kept as
        # surrogates, then shown escaped like every other undecodable byte
        return wiretext.clean(json.loads(bytes(data).decode("utf-8", "surrogateescape")))
    if isinstance(data, str):
        suspect = wiretext.lone_surrogate_at(value) is not None
    else:
        suspect = wiretext.may_hold_surrogate(bytes(data))
    return wiretext.clean(value) if suspect else value


def _ascii_line(record: Any) -> bytes:
    return json.dumps(record, ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode(
        "ascii"
    )


def dumps_line(record: Any) -> bytes:
    """Compact, ASCII-only JSON without a newline, with no lone surrogate escape in it.
    Raises ValueError (or TypeError) for what JSON cannot hold (``NaN``, a non-string
    key type it cannot convert, sets...)."""
    line = _ascii_line(record)
    if wiretext.may_hold_surrogate(line) and wiretext.lone_surrogate_at(record) is not None:
        line = _ascii_line(wiretext.clean(record))
    return line


def dumps(value: Any) -> bytes:
    """Plain JSON for the folder's own files (the listing cache), UTF-8."""
    return json.dumps(value).encode("utf-8")
