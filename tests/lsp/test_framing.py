"""The framing parser (crank.lsp.framing) on its own: what is tolerated, what is
refused, and the properties that make it safe: any split of a stream gives the same
frames; garbage or a refused frame never costs the well-formed frame after it."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crank.lsp.framing import MAX_BODY, Frame, FrameParser, Refused, Skipped

relaxed = settings(deadline=None, suppress_health_check=list(HealthCheck), max_examples=300)


def frame(body: bytes, header: bytes = b"Content-Length: %d\r\n\r\n") -> bytes:
    return header % len(body) + body


def parse(*chunks: bytes) -> list[object]:
    parser = FrameParser()
    events: list[object] = []
    for chunk in chunks:
        events += parser.feed(chunk)
    return events + parser.end()


def frames(events: list[object]) -> list[bytes]:
    return [event.body for event in events if isinstance(event, Frame)]


BODY = b'{"jsonrpc":"2.0","id":1,"method":"crank/state","params":{}}'
NEXT = b'{"jsonrpc":"2.0","id":2,"method":"crank/state","params":{}}'


@pytest.mark.parametrize(
    "header",
    [
        b"Content-Length: %d\r\n\r\n",
        b"content-length: %d\r\n\r\n",
        b"CONTENT-LENGTH:%d\r\n\r\n",
        b"Content-Length: %d\n\n",
        b"Content-Length: %d\n\r\n",
        b"  Content-Length  :   %d   \r\n\r\n",
        b"Content-Length:\t%d\t\r\n\r\n",
        b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: %d\r\n\r\n",
        b"Content-Length: %d\r\nContent-Type: x\r\nX-Other: y\r\n\r\n",
        b"Content-Length: %d\r\nContent-Length: %d\r\n\r\n",
        b"Content-Length: 000%d\r\n\r\n",
        b"\r\n\r\n  \nContent-Length: %d\r\n\r\n",
    ],
)
def test_tolerated_headers(header: bytes) -> None:
    count = header.count(b"%d")
    head = header % ((len(BODY),) * count)
    assert parse(head + BODY + frame(NEXT)) == [Frame(BODY), Frame(NEXT)]


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (b"Content-Length: abc\r\n\r\n" + BODY, "not a decimal"),
        (b"Content-Length: -5\r\n\r\n" + BODY, "not a decimal"),
        (b"Content-Length: +5\r\n\r\n" + BODY, "not a decimal"),
        (b"Content-Length: 5.0\r\n\r\n" + BODY, "not a decimal"),
        (b"Content-Length: \r\n\r\n" + BODY, "not a decimal"),
        (b"Content-Length: 10\r\nContent-Length: 12\r\n\r\n" + BODY, "two different"),
        (b"Content-Length: %d\r\n\r\n" % (MAX_BODY + 1) + BODY, "larger than the limit"),
        (b"Content-Length: 99999999999999999999\r\n\r\n" + BODY, "larger than the limit"),
        (b"Content-Length: " + b"9" * 6000 + b"\r\n\r\n" + BODY, "larger than the limit"),
        (b"Content-Type: text/plain\r\n\r\n" + BODY, "without Content-Length"),
        (b"Content-Length: 5\r\nno colon here\r\n\r\n" + BODY, "not Name: value"),
        (b"Content-Length: 500\r\n\r\n" + BODY, "larger than the body"),
    ],
)
def test_refused_frames_cost_nothing_after_them(bad: bytes, reason: str) -> None:
    events = parse(bad + frame(NEXT))
    refused = [event for event in events if isinstance(event, Refused)]
    assert len(refused) == 1 and reason in refused[0].reason
    assert frames(events) == [NEXT]
    assert not [event for event in events if isinstance(event, Skipped)]


def test_a_body_cut_by_the_next_header_is_handed_on() -> None:
    events = parse(b"Content-Length: 500\r\n\r\n" + BODY + frame(NEXT))
    assert events[0] == Refused(events[0].reason, BODY)  # type: ignore[attr-defined]


def test_too_small_a_length_skips_the_rest_of_its_body() -> None:
    events = parse(b"Content-Length: 10\r\n\r\n" + BODY + frame(NEXT))
    assert events[0] == Frame(BODY[:10])
    assert isinstance(events[1], Skipped) and events[1].count == len(BODY) - 10
    assert events[2:] == [Frame(NEXT)]


def test_stray_bytes_between_frames_are_skipped_once() -> None:
    events = parse(frame(BODY), b"hello\nworld\n{}}}", frame(NEXT))
    assert frames(events) == [BODY, NEXT]
    assert [e for e in events if isinstance(e, Skipped)] == [Skipped(16, b"hello\nworld\n{}}}")]


def test_a_header_glued_to_garbage_is_found() -> None:
    events = parse(b'od":"x"}}' + frame(NEXT))
    assert frames(events) == [NEXT]
    events = parse(b"Content-Type: x" + frame(NEXT))
    assert frames(events) == [NEXT]


def test_the_end_of_input_inside_a_frame_is_reported() -> None:
    assert parse(b"Content-Length: 50\r\n\r\n{") == [
        Refused("the input ended inside a frame (1 of 50 body bytes)")
    ]
    assert parse(b"Content-Len") == [Refused("the input ended inside a frame's header")]
    assert parse(b"\r\n\r\n") == []


def test_a_header_that_never_ends_is_refused_without_waiting() -> None:
    parser = FrameParser()
    events = parser.feed(b"Content-Type: " + b"x" * 10_000)
    assert [type(event) for event in events] == [Refused]
    assert parser.feed(frame(NEXT)) == [Frame(NEXT)]


def test_an_empty_body_is_a_frame() -> None:
    assert parse(frame(b"")) == [Frame(b"")]


# -- properties ----------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
bodies = json_values.map(lambda value: json.dumps(value, ensure_ascii=False).encode())
headers = st.sampled_from(
    [
        b"Content-Length: %d\r\n\r\n",
        b"content-length:%d\n\n",
        b"Content-Length : %d \r\nContent-Type: application/vscode-jsonrpc\r\n\r\n",
    ]
)


@st.composite
def streams(draw: st.DrawFn) -> tuple[list[bytes], bytes]:
    items = draw(st.lists(st.tuples(bodies, headers), min_size=1, max_size=8))
    stream = b"".join(frame(body, header) for body, header in items)
    return [body for body, _ in items], stream


@st.composite
def splits(draw: st.DrawFn, data: bytes) -> list[bytes]:
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=12)))
    edges = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges)]


@relaxed
@given(st.data())
def test_any_split_of_a_valid_stream_gives_the_same_frames(data: st.DataObject) -> None:
    expected, stream = data.draw(streams())
    chunks = data.draw(splits(stream))
    assert parse(*chunks) == [Frame(body) for body in expected]


garbage = st.binary(max_size=200).filter(lambda g: b"content-length" not in g.lower())


@relaxed
@given(st.data(), garbage)
def test_garbage_then_a_valid_frame_keeps_the_frame(data: st.DataObject, junk: bytes) -> None:
    expected, stream = data.draw(streams())
    chunks = data.draw(splits(junk + stream))
    events = parse(*chunks)
    # Garbage may swallow nothing but itself: every frame after it arrives, in order.
    assert frames(events)[-len(expected) :] == expected
    assert len(frames(events)) == len(expected)


bad_headers = st.sampled_from(
    [
        b"Content-Length: abc\r\n\r\n",
        b"Content-Length: -12\r\n\r\n",
        b"Content-Length: 3\r\nContent-Length: 4\r\n\r\n",
        b"Content-Length: 99999999999\r\n\r\n",
        b"Content-Type: x\r\n\r\n",
        b"Content-Length: 2\r\n\r\n",
        b"Content-Length: 100000\r\n\r\n",
    ]
)


@relaxed
@given(st.data(), bad_headers, bodies)
def test_a_refused_frame_never_costs_the_next(
    data: st.DataObject, bad: bytes, bad_body: bytes
) -> None:
    expected, stream = data.draw(streams())
    chunks = data.draw(splits(bad + bad_body + stream))
    assert frames(parse(*chunks))[-len(expected) :] == expected


@relaxed
@given(st.lists(st.binary(max_size=300), max_size=10))
def test_no_bytes_make_the_parser_raise(chunks: list[bytes]) -> None:
    parser = FrameParser()
    for chunk in chunks:
        parser.feed(chunk)
    parser.end()
    # and it still reads a well-formed frame afterwards
    assert parser.feed(frame(NEXT)) == [Frame(NEXT)]
