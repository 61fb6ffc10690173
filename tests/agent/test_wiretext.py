"""The one rule for outgoing text (crank.agent.wiretext): escapes, never raises."""

from __future__ import annotations

import json
from pathlib import PurePosixPath

import msgspec

from crank.agent import wiretext


def test_a_kept_byte_and_a_lone_surrogate_are_shown_escaped() -> None:
    assert wiretext.shown("bad\udcffname.txt") == "bad\\xffname.txt"
    assert wiretext.shown("a\ud800b") == "a\\ud800b"
    assert wiretext.shown("plain é 😀") == "plain é 😀"
    assert wiretext.encode("bad\udcffname") == b"bad\\xffname"
    assert wiretext.decode_os(b"bad\xffname") == "bad\\xffname"


def test_json_keeps_the_escape_as_text_and_stays_json() -> None:
    value = {"k\ud800": ["bad\udcffname", "é"]}
    body = wiretext.dumps(value)
    body.decode("utf-8")
    assert json.loads(body) == {"k\\ud800": ["bad\\xffname", "é"]}
    text = wiretext.dumps_text(value)
    assert json.loads(text) == json.loads(body)
    assert json.loads(json.loads(json.dumps({"a": wiretext.dumps_text(value)}))["a"])


def test_compact_json_is_the_same_json_whichever_encoder_writes_it() -> None:
    """``dumps_compact`` encodes in C where it can; what the C encoder refuses (a lone
    surrogate, a value only ``str()`` can show) is written by ``dumps``, the same rule."""
    plain = {"a": [1, 2**70, "é 😀", None, True, 0.5], "b": {"c": "\n\t\u0001"}}
    assert wiretext.dumps_compact(plain) == wiretext.dumps(plain, separators=(",", ":"))
    assert json.loads(wiretext.dumps_compact({"k\ud800": "bad\udcffname"})) == {
        "k\\ud800": "bad\\xffname"
    }
    assert json.loads(wiretext.dumps_compact({"path": PurePosixPath("/a b")})) == {"path": "/a b"}
    raw = msgspec.Raw(b'{"kept":"as written"}')
    assert wiretext.dumps_compact({"m": [raw]}) == b'{"m":[{"kept":"as written"}]}'


def test_incoming_surrogates_are_found_by_path() -> None:
    assert wiretext.may_hold_surrogate(b'{"a":"\\uD800"}')
    assert not wiretext.may_hold_surrogate(b'{"a":"\\u00e9"}')
    assert wiretext.lone_surrogate_at({"params": {"prompt": [{"text": "x\ud800"}]}}) == (
        "params.prompt.0.text"
    )
    assert wiretext.lone_surrogate_at({"a": "😀"}) is None
