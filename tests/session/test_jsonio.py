"""The one JSON module under session files reads exactly what the standard library
reads (msgspec where it agrees, the standard library where msgspec refuses), writes what
the log has always written, and the line-at-a-time reader gives the same tree as the
whole-file reader, torn files included."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crank.agent import wiretext
from crank.session import TornSession, jsonio
from crank.session import tree as tree_module
from crank.session.entries import encode, make_header
from crank.session.errors import SessionUnreadable
from crank.session.tree import SessionTree

# Any text, lone surrogates included (tools keep undecodable bytes that way).
texts = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=30)
values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=20,
)


@given(values)
@settings(max_examples=300)
def test_reading_gives_what_the_standard_library_gives(value: Any) -> None:
    """Lone surrogates are written escaped (``\\xff``, ``\\ud800``: agent/wiretext.py),
    everything else exactly as the standard library writes it."""
    written = jsonio.dumps_line(value)
    cleaned = wiretext.clean(value)
    assert written == json.dumps(cleaned, ensure_ascii=True, separators=(",", ":")).encode()
    decoded = jsonio.loads(written)
    expected = json.loads(written)
    assert decoded == expected or (_has_nan(decoded) and repr(decoded) == repr(expected))
    assert jsonio.loads(memoryview(written)) == decoded


def _has_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


@pytest.mark.parametrize(
    "text",
    [b'{"a":"\\udcff"}', b'{"n":-9223372036854775809}', b'{"x":NaN}', b"[1e400]"],
)
def test_what_msgspec_refuses_or_would_change_the_standard_library_reads(text: bytes) -> None:
    """...with a lone surrogate (what earlier versions wrote) shown escaped."""
    assert repr(jsonio.loads(text)) == repr(wiretext.clean(json.loads(text)))


def test_a_line_that_is_not_utf8_is_read_with_its_bytes_escaped() -> None:
    assert jsonio.loads(b'{"a":"bad\xffname","b":"\xc3\xa9"}') == {"a": "bad\\xffname", "b": "é"}


@pytest.mark.parametrize("text", [b"", b"{", b'{"a":1', b"\xff\xfe", b"[1,]", b'"\\x"'])
def test_bad_json_is_a_value_error_with_the_standard_librarys_words(text: bytes) -> None:
    with pytest.raises(ValueError) as ours:
        jsonio.loads(text)
    with pytest.raises(ValueError) as theirs:
        json.loads(text)
    assert str(ours.value) == str(theirs.value)


def test_lines_stay_ascii_as_every_earlier_version_wrote_them() -> None:
    line = encode({"type": "message", "text": "café ✓ \udcff"})
    assert line == b'{"type":"message","text":"caf\\u00e9 \\u2713 \\\\xff"}\n'


entries_strategy = st.lists(st.tuples(texts, st.integers(0, 3)), max_size=12)


def _file(contents: list[tuple[str, int]]) -> bytes:
    lines = [encode(make_header("s", "/w", "2026-01-01T00:00:00.000Z"))]
    parent = None
    for number, (text, pad) in enumerate(contents):
        entry_id = f"{number:08x}"
        message = {"role": "user", "content": text * (pad * 50 + 1), "timestamp": 1}
        entry = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": 1}
        lines.append(encode({**entry, "message": message}))
        parent = entry_id
    return b"".join(lines)


@given(entries_strategy, st.integers(min_value=1, max_value=300), st.integers(0, 40))
@settings(max_examples=150, deadline=None)
def test_reading_a_line_at_a_time_is_reading_the_whole_file(
    contents: list[tuple[str, int]], block: int, cut: int
) -> None:
    data = _file(contents)
    if cut:
        data = data[:-cut]  # sometimes torn, sometimes a whole line shorter
    with pytest.MonkeyPatch.context() as patch, _temporary(data) as path:
        patch.setattr(tree_module, "READ_BLOCK", block)
        expected = _outcome(lambda: SessionTree.load(path, data))
        assert _outcome(lambda: SessionTree.read(path)) == expected


def _outcome(read: Any) -> Any:
    try:
        tree = read()
    except SessionUnreadable as error:
        return type(error).__name__, str(error)
    return tree.header, tree.entries, tree.line_of


class _temporary:
    def __init__(self, data: bytes) -> None:
        import tempfile

        self._dir = tempfile.TemporaryDirectory()
        self.path = Path(self._dir.name) / "s.jsonl"
        self.path.write_bytes(data)

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, *exc: object) -> None:
        self._dir.cleanup()


def test_a_line_the_file_grew_after_the_check_is_torn_where_it_is() -> None:
    data = _file([("a", 0), ("b", 0)]) + b'{"type":"mess'
    lines = list(tree_module._complete_lines(Path("s.jsonl"), io.BytesIO(data[:-13])))
    assert len(lines) == 3
    with pytest.raises(TornSession) as torn:
        list(tree_module._complete_lines(Path("s.jsonl"), io.BytesIO(data)))
    assert "line 4" in str(torn.value)


def test_a_read_file_keeps_one_string_per_repeated_name(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    lines = [encode(make_header("s", "/w", "2026-01-01T00:00:00.000Z"))]
    for number in range(3):
        message = {"role": "toolResult", "toolName": "read", "content": "x", "timestamp": 1}
        parent = f"{number - 1:08x}" if number else None
        entry = {"type": "message", "id": f"{number:08x}", "parentId": parent, "timestamp": 1}
        lines.append(encode({**entry, "message": message}))
    path.write_bytes(b"".join(lines))
    first, second, third = SessionTree.read(path).entries
    assert first["message"]["toolName"] is second["message"]["toolName"]
    assert first["message"]["role"] is third["message"]["role"] and first["type"] is third["type"]
    assert SessionTree.read(path).entries == SessionTree.load(path, path.read_bytes()).entries


def test_a_read_result_shares_its_tool_call_id_with_its_call(tmp_path: Path) -> None:
    """Every tool result names its call by the call's id: read back, one string for
    both (a model that reuses an id per turn still gets each result its own turn's)."""
    path = tmp_path / "s.jsonl"
    lines = [encode(make_header("s", "/w", "2026-01-01T00:00:00.000Z"))]
    messages: list[dict[str, Any]] = []
    for turn in range(2):
        call = {"type": "toolCall", "id": "call_0", "name": "read", "arguments": {}}
        messages.append({"role": "assistant", "content": [call], "timestamp": turn})
        messages.append({"role": "toolResult", "toolCallId": "call_0", "content": str(turn)})
    messages.append({"role": "toolResult", "toolCallId": "call_0", "content": "a stray"})
    for number, message in enumerate(messages):
        parent = f"{number - 1:08x}" if number else None
        entry = {"type": "message", "id": f"{number:08x}", "parentId": parent, "timestamp": 1}
        lines.append(encode({**entry, "message": message}))
    path.write_bytes(b"".join(lines))
    entries = [entry["message"] for entry in SessionTree.read(path).entries]
    first_call, second_call = entries[0]["content"][0]["id"], entries[2]["content"][0]["id"]
    assert entries[1]["toolCallId"] is first_call and entries[3]["toolCallId"] is second_call
    assert first_call is not second_call  # each turn's own
    assert entries[4]["toolCallId"] == "call_0"  # no call left to share with: its own string
    assert SessionTree.read(path).entries == SessionTree.load(path, path.read_bytes()).entries
