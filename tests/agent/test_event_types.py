"""The typed events are the protocol's table: every type and every key docs/protocol.md
promises, no more, and mypy refuses an event with a wrong key."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any, get_args, get_type_hints

import pytest
from mypy import api as mypy_api

from crank.workspace.stream import WireEvent

PROTOCOL = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def documented() -> dict[str, set[str]]:
    """``type -> keys`` from the event table of docs/protocol.md."""
    text = PROTOCOL.read_text("utf-8")
    table = text.split("`event.type` is\none of:", 1)[1].split("\n\n", 2)[1]
    out: dict[str, set[str]] = {}
    for row in table.splitlines()[2:]:
        kinds, fields = (cell.strip() for cell in row.strip("|").split("|", 1))
        names = re.findall(r"`([a-z_]+)`", kinds)
        parts = fields.split(" / ") if len(names) == 2 else [fields]
        for name, part in zip(names, parts, strict=True):
            out[name] = {m.rstrip("?") for m in re.findall(r"`([A-Za-z]+\??)[:`]", part)}
    # "`attempt`, `delayMs`, `error` / `success`": the end says how the attempt went.
    out["retry_end"] |= {"attempt"}
    return out


def typed() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for shape in get_args(WireEvent):
        hints: dict[str, Any] = get_type_hints(shape)
        (name,) = get_args(hints["type"])
        out[name] = set(hints) - {"type"}
    return out


def test_every_event_of_the_protocol_is_typed_with_exactly_its_keys() -> None:
    assert typed() == documented()


def test_mypy_refuses_an_event_with_a_misspelt_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        textwrap.dedent(
            """
            from crank.agent.events import Event

            good: Event = {"type": "turn_start", "turn": 1}
            bad: Event = {"type": "turn_start", "turns": 1}
            """
        )
    )
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\n")
    monkeypatch.setenv("MYPYPATH", str(Path(__file__).resolve().parents[2] / "server"))
    args = ["--strict", "--no-incremental", "--config-file", str(config), str(sample)]
    out, _err, status = mypy_api.run(args)
    assert status == 1, out
    assert "sample.py:5:" in out and "sample.py:4:" not in out, out
