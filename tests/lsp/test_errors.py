"""The one table of Crank's error codes (crank.lsp.errors): complete, unchanged on the
wire, the only place the numbers live, and advertised to clients by name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from crank.lsp.errors import CODES, all_kinds, rpc_error, wire_codes
from crank.session import (
    NoSuchSession,
    SessionBusy,
    SessionClosed,
    SessionError,
    SessionLocked,
    SessionUnreadable,
    SummaryFailed,
    TornSession,
    UnknownEntry,
)
from crank.vendors import ConfigError
from crank.workspace import CrankError, invalid_params

from .wire import started

REPO = Path(__file__).resolve().parents[2]


def test_every_kind_has_exactly_one_code() -> None:
    assert set(CODES) == all_kinds()


def test_the_numbers_on_the_wire_are_those_protocol_md_fixes() -> None:
    assert wire_codes() == {
        "runInProgress": 1001,
        "noSuchSession": 1002,
        "noSuchWorkspace": 1003,
        "noProvider": 1004,
        "sessionUnreadable": 1005,
        "refusedWhileRunning": 1006,
        "sessionLocked": 1007,
        "unknownCommand": 1008,
        "noSuchImage": 1009,
    }
    assert CODES["invalid_params"] == -32602 and CODES["internal_error"] == -32603


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (NoSuchSession("s", "/x"), 1002),
        (SessionUnreadable("/x", "line 2", "bad"), 1005),
        (TornSession("/x", 3, 10), 1005),
        (SessionClosed("closed"), 1005),
        (SessionLocked("/x"), 1007),
        (SessionBusy("branching"), 1006),
        (UnknownEntry("e1", "/x"), -32602),
        (SummaryFailed("no"), -32603),
        (ConfigError("set CRANK_MODEL"), 1004),
        (CrankError("run_in_progress", "busy"), 1001),
        (CrankError("no_such_workspace", "none"), 1003),
        (invalid_params("text", "must be a string"), -32602),
    ],
)
def test_typed_refusals_map_to_their_codes(error: Exception, code: int) -> None:
    rpc = rpc_error(error)
    assert rpc is not None and rpc.code == code and rpc.message == str(error)


def test_every_session_error_class_has_a_kind_in_the_table() -> None:
    pending: list[type[SessionError]] = [SessionError]
    while pending:
        cls = pending.pop()
        assert cls.kind in CODES, cls
        pending.extend(cls.__subclasses__())


def test_a_bug_is_not_a_refusal() -> None:
    assert rpc_error(KeyError("x")) is None


def test_the_numbers_are_written_in_one_table_only() -> None:
    number = re.compile(r"\b100[1-7]\b")
    places = [REPO / "server" / "crank", REPO / "nvim-client" / "lua"]
    table = REPO / "server" / "crank" / "workspace" / "errors.py"
    drawing = REPO / "server" / "crank" / "lsp" / "errors.py"  # the tree in its docstring
    found = [
        f"{path.relative_to(REPO)}:{index}"
        for place in places
        for path in place.rglob("*")
        if path.suffix in (".py", ".lua") and path not in (table, drawing)
        for index, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if number.search(line)
    ]
    assert found == []


async def test_initialize_advertises_the_codes_by_name(tmp_path: Path) -> None:
    wire = await started(tmp_path)
    result = wire.answers["init"][0]["result"]
    assert result["capabilities"]["experimental"]["crank"]["errorCodes"] == wire_codes()
    assert await wire.close() == 0
