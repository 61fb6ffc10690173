"""File names as the model sees them, and back: the one owner of the escape.

A name on Linux is bytes. Python decodes the bytes that are not UTF-8 as lone
surrogates (``surrogateescape``: ``b"bad\\xffname.txt"`` is ``"bad\\udcffname.txt"``),
which no UTF-8 encoder accepts: such a name must never reach an event, a frame or a
session line as it is. ``shown`` writes each of those bytes as the four characters
``\\xff`` (as ripgrep and ``ls -b`` do) and a control character (a newline in a name
would forge a line of ls's output) as ``\\x0a``; everything else, a backslash too, is
left as it is. ``unescaped`` is the inverse, for a path the model sends back.

Where a name could be read both ways (a file really called ``bad\\xffname.txt`` beside
one with the byte), ``ToolContext.resolve`` refuses to guess (see ``candidates``).
"""

from __future__ import annotations

import re

_HIDDEN = re.compile("[\x00-\x1f\x7f\udc80-\udcff]")
_ESCAPE = re.compile(r"\\x([0-9a-fA-F]{2})")


def _hex(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code - 0xDC00 if code >= 0xDC00 else code:02x}"


def shown(name: str) -> str:
    """``name`` (a path or one name, as ``os`` decodes it) with each byte that is not
    UTF-8 and each control character as ``\\xNN``: always encodable, one line."""
    return _HIDDEN.sub(_hex, name) if _HIDDEN.search(name) else name


def _byte(found: re.Match[str]) -> str:
    code = int(found.group(1), 16)
    return chr(0xDC00 + code) if code >= 0x80 else chr(code)


def unescaped(text: str) -> str:
    """The name ``shown`` made ``text`` from (``\\xff`` back to the byte), ``text`` itself
    when it holds no ``\\xNN``."""
    return _ESCAPE.sub(_byte, text) if "\\x" in text else text


def candidates(raw: str) -> tuple[str, ...]:
    """The readings of a path argument: as written, then (when it holds ``\\xNN``) with
    the escapes undone. ``resolve`` takes the one that exists, and refuses when both do."""
    other = unescaped(raw)
    return (raw,) if other == raw else (raw, other)
