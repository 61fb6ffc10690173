"""Crank's refusals and their codes (crank.workspace.errors, crank.lsp.errors): a class
per refusal, the tree drawn beside them true, one table per protocol, complete and
unchanged on the wire, the only place the numbers live, advertised to clients by name."""

from __future__ import annotations

import io
import itertools
import re
import tokenize
from pathlib import Path

import pytest

import crank.workspace.errors as refusals
from crank.lsp.errors import CODES, all_kinds, rpc_error, wire_codes
from crank.session import (
    AmbiguousSession,
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
    assert set(refusals.ACP_CODES) == all_kinds()


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


def test_the_numbers_are_written_in_one_module_only() -> None:
    """Crank's numbers (1001-1009) and JSON-RPC's (-32xxx) appear as numbers in code
    only in crank.workspace.errors (prose may name them); the Lua client's code has none
    (its comments may: the generated types.lua carries the contract's docstrings)."""
    crank_numbers = {str(n) for n in range(1001, 1010)}
    rpc_numbers = {"32700", "32600", "32601", "32602", "32603", "32800", "32002", "32000"}
    table = REPO / "server" / "crank" / "workspace" / "errors.py"
    found: list[str] = []
    for path in (REPO / "server" / "crank").rglob("*.py"):
        if path == table:
            continue
        tokens = list(tokenize.generate_tokens(io.StringIO(path.read_text("utf-8")).readline))
        for before, token in itertools.pairwise(tokens):
            if token.type != tokenize.NUMBER:
                continue
            negative = before.type == tokenize.OP and before.string == "-"
            if token.string in crank_numbers or (negative and token.string in rpc_numbers):
                found.append(f"{path.relative_to(REPO)}:{token.start[0]}")
    number = re.compile(r"\b100[1-9]\b")
    for path in (REPO / "nvim-client" / "lua").rglob("*.lua"):
        for index, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            if number.search(line.split("--", 1)[0]):  # code, not comments (prose may)
                found.append(f"{path.relative_to(REPO)}:{index}")
    assert found == []


def _drawing() -> dict[str, tuple[str, int, int]]:
    """The tree in crank.workspace.errors' docstring: class name to (kind, LSP, ACP)."""
    doc = refusals.__doc__ or ""
    rows: dict[str, tuple[str, int, int]] = {}
    for line in doc.split("::", 1)[1].split("\n\n", 2)[1].splitlines():
        match = re.search(r"[─└├]── ([\w.]+)\s+(\w+)\s+(-?\d+)\s+(-?\d+)\s*$", line)
        if match:
            name = match.group(1).rsplit(".", 1)[-1]
            rows[name] = (match.group(2), int(match.group(3)), int(match.group(4)))
    return rows


def _subclasses(root: type) -> list[type]:
    found, pending = [], [root]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


def test_the_tree_beside_the_classes_is_true() -> None:
    """Every refusal class is drawn (the drawing used to miss AmbiguousSession), with
    its kind and its code in each protocol's table."""
    drawn = _drawing()
    classes = [
        cls
        for root in (CrankError, SessionError, ConfigError)
        for cls in _subclasses(root)
        if cls not in (CrankError, SessionError) and cls.__module__.startswith("crank.")
    ]
    assert sorted(cls.__name__ for cls in classes) == sorted(drawn)
    for cls in classes:
        kind, lsp, acp = drawn[cls.__name__]
        assert cls.kind == kind, cls
        assert refusals.LSP_CODES[cls.kind] == lsp and refusals.ACP_CODES[cls.kind] == acp, cls
        if issubclass(cls, CrankError):
            assert refusals.LSP_CODES[cls.kind] == cls.CODE, cls
    assert AmbiguousSession.__name__ in drawn


def test_each_refusal_is_a_class_that_can_be_caught_by_type() -> None:
    with pytest.raises(refusals.RunInProgress) as caught:
        raise CrankError("run_in_progress", "busy")  # the old spelling still types it
    assert caught.value.message == "busy" and caught.value.CODE == 1001
    assert isinstance(invalid_params("text", "must be a string"), refusals.InvalidParams)
    assert not isinstance(refusals.NoSuchWorkspace("x"), refusals.RunInProgress)
    locked = CrankError("session_locked", "held elsewhere")  # a kind with no class here
    assert locked.kind == "session_locked" and refusals.code_of(locked) == 1007


def test_acp_has_its_own_codes_where_acp_gives_the_number_a_meaning() -> None:
    """ACP's -32002 is "resource not found": a request before initialize is not that."""
    assert refusals.LSP_CODES["not_initialized"] == -32002
    assert refusals.ACP_CODES["not_initialized"] == -32600
    assert refusals.code_of(NoSuchSession("s", "/x"), "acp") == -32002
    assert refusals.code_of(NoSuchSession("s", "/x"), "lsp") == 1002
    assert refusals.code_of(SessionLocked("/x"), "acp") == 1007


def test_refusal_kinds_and_reply_error_kinds_have_different_names() -> None:
    """``ErrorKind`` is the class of a model's error reply (crank.agent); the refusal
    kinds are ``RefusalKind``."""
    assert not hasattr(refusals, "ErrorKind")
    assert "no_such_session" in all_kinds()


async def test_initialize_advertises_the_codes_by_name(tmp_path: Path) -> None:
    wire = await started(tmp_path)
    result = wire.answers["init"][0]["result"]
    assert result["capabilities"]["experimental"]["crank"]["errorCodes"] == wire_codes()
    assert await wire.close() == 0
