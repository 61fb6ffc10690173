"""The one rule for text that leaves Crank: nothing that cannot be encoded reaches an
encoder, and nothing raises because of it.

Text from the operating system is not always Unicode. A file name is bytes (Python
hands it over with ``surrogateescape``: the byte ``0xff`` becomes the lone surrogate
``U+DCFF``); a command prints whatever bytes it likes; a client may send valid JSON
holding an unpaired surrogate (``"\\ud800"``). A strict UTF-8 encoder raises on each of
them, and a raise in a writer wedges whatever was writing (a run that never settles,
a session line never saved, a provider body never sent).

The rule, the same at every boundary (events and answers over LSP and ACP, session
lines, provider request bodies, ``crank run`` output, tool output):

- **Bytes from the OS** are decoded with ``decode_os`` (policy ``backslashreplace``):
  an undecodable byte is shown as ``\\xff``, as ripgrep and ``ls -b`` show it.
- **A lone surrogate in outgoing text** is written as that same escape: ``U+DC80`` to
  ``U+DCFF`` (a byte that ``surrogateescape`` kept) as ``\\xNN``, any other
  (``U+D800``...) as ``\\uXXXX``. ``shown`` does it to a string; the error handlers
  ``TEXT`` and ``JSON`` do it inside an encoder, where it costs nothing unless a
  surrogate is there: ``text.encode("utf-8", TEXT)``, and for JSON written with
  ``ensure_ascii=False``, ``body.encode("utf-8", JSON)`` (the backslash doubled, so the
  JSON string holds the escape as text). ``dumps`` is that, for a whole value.

The escape is what a person reads; it is not reversible, and is not meant to be (the
record keeps what was shown). Incoming text is the frontends' business: a surrogate in
a request is refused by name (``lone_surrogate_at`` finds where), never escaped.
"""

from __future__ import annotations

import codecs
import json
import re
from typing import Any

TEXT = "crank-escape"
"""Error handler name: a lone surrogate becomes ``\\xNN`` / ``\\uXXXX`` in plain text."""
JSON = "crank-json-escape"
"""Error handler name: the same, inside a JSON string (``\\\\xNN``)."""
OS_POLICY = "backslashreplace"
"""How bytes from the OS (command output, file names) are decoded for display."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _escape(char: str) -> str:
    point = ord(char)
    if 0xDC80 <= point <= 0xDCFF:
        return f"\\x{point - 0xDC00:02x}"
    return f"\\u{point:04x}"


def _text_handler(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    piece = error.object[error.start : error.end]
    return "".join(_escape(c) for c in piece), error.end


def _json_handler(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    piece = error.object[error.start : error.end]
    return "".join("\\" + _escape(c) for c in piece), error.end


codecs.register_error(TEXT, _text_handler)
codecs.register_error(JSON, _json_handler)


def shown(text: str) -> str:
    """``text`` with each lone surrogate written as its escape (the same string when
    there is none, which is checked at C speed)."""
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(lambda m: _escape(m.group()), text)


def decode_os(data: bytes) -> str:
    """Bytes from the OS (a command's output, a file name) as text to show."""
    return data.decode("utf-8", OS_POLICY)


def os_name(name: str) -> str:
    """A name as ``os.listdir``/``os.fsdecode`` gives it, as text to show."""
    return shown(name)


def encode(text: str) -> bytes:
    """Plain text as UTF-8, lone surrogates escaped."""
    return text.encode("utf-8", TEXT)


def dumps(value: Any, **options: Any) -> bytes:
    """``json.dumps(value, ensure_ascii=False, **options)`` as UTF-8 bytes that always
    encode: a lone surrogate in any string is written as its escape."""
    return json.dumps(value, ensure_ascii=False, **options).encode("utf-8", JSON)


_compact_encoder: Any = None


def dumps_compact(value: Any) -> bytes:
    """Compact JSON as UTF-8 bytes that always encode, encoded in C (msgspec) where it
    can be: an answer can be tens of megabytes (a resumed transcript), which the
    standard library takes ten times as long to write. What the C encoder refuses (a
    lone surrogate, a type only ``str()`` can show) is written by ``dumps`` instead,
    with the same rule. A ``msgspec.Raw`` is written as the JSON it holds. Unlike
    ``dumps``, a float NaN or infinity is written as ``null`` (JSON has no such number)."""
    global _compact_encoder
    if _compact_encoder is None:
        try:  # imported on first use: ``crank serve`` answers initialize before it
            import msgspec
        except ImportError:  # pragma: no cover - a dependency
            _compact_encoder = False
        else:
            _compact_encoder = msgspec.json.Encoder().encode
    if _compact_encoder:
        try:
            encoded: bytes = _compact_encoder(value)
            return encoded
        except (UnicodeEncodeError, TypeError):
            pass
    return dumps(value, separators=(",", ":"), default=str)


def dumps_text(value: Any, **options: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, **options)`` as a string that always
    encodes (JSON inside JSON, such as OpenAI's tool-call ``arguments``, and lines
    printed to a text stream)."""
    text = json.dumps(value, ensure_ascii=False, **options)
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(lambda m: "\\" + _escape(m.group()), text)


def clean(value: Any) -> Any:
    """``value`` (decoded JSON) with lone surrogates escaped in every string, keys too.
    For the rare slow path only (a line known to hold one); walks everything."""
    if isinstance(value, str):
        return shown(value)
    if isinstance(value, dict):
        return {clean(k): clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean(item) for item in value]
    return value


def may_hold_surrogate(body: bytes) -> bool:
    """Whether JSON bytes could decode to a string with a surrogate: only a ``\\uDxxx``
    escape can make one (UTF-8 cannot hold a surrogate). False is certain; True may be
    a proper pair (an emoji) and needs ``lone_surrogate_at``."""
    return _ESCAPED_SURROGATE.search(body) is not None


def lone_surrogate_at(value: Any, path: str = "") -> str | None:
    """The dotted path of the first string (or key) in decoded JSON holding a lone
    surrogate (``params.prompt.0.text``), or None. ``""`` is the value itself."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item) is not None:
                return where
        elif isinstance(item, dict):
            for key, child in reversed(list(item.items())):
                name = f"{where}.{key}" if where else str(key)
                if isinstance(key, str) and _SURROGATE.search(key) is not None:
                    return shown(name)
                stack.append((child, name))
        elif isinstance(item, list):
            for index in range(len(item) - 1, -1, -1):
                stack.append((item[index], f"{where}.{index}" if where else str(index)))
    return None


def incoming_surrogate(message: Any) -> str | None:
    """Where a decoded JSON-RPC message holds a lone surrogate: ``"id"``, ``"method"``,
    or the path of the first string under ``params`` (``params.prompt.0.text``); any
    other key by its path. None when it holds none. The frontends refuse a request
    with -32602 naming this field (with id null when it is the id), so nothing is
    accepted half-way; a notification or an answer is taken with the text escaped
    (``clean``), since nothing can be answered."""
    if not isinstance(message, dict):
        return lone_surrogate_at(message)
    for key in ("id", "method", "params"):
        if key in message:
            where = lone_surrogate_at(message[key], key)
            if where is not None:
                return where
    return lone_surrogate_at(
        {k: v for k, v in message.items() if k not in ("id", "method", "params")}
    )


def refusal(field: str) -> str:
    """The error message for a request refused for a lone surrogate in ``field``."""
    return (
        f"{field}: holds an unpaired surrogate (a lone UTF-16 half such as \\ud800), "
        "which is not text; send the characters themselves or a proper pair"
    )
