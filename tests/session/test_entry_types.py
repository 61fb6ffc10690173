"""Each kind of session entry has one statement of its fields (``entries.ENTRY_FIELDS``),
and writing holds to it: a misspelt or missing key is refused before anything is
written, instead of going into the file for good and reading back as missing."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest

from crank.session import SessionLog
from crank.session.entries import ENTRY_FIELDS, ENTRY_TYPES, EntryType, check_fields


def test_every_kind_has_its_fields_type() -> None:
    assert set(ENTRY_FIELDS) == set(ENTRY_TYPES) == set(get_args(EntryType))


def test_required_optional_and_unknown_keys() -> None:
    check_fields("compaction", {"summary": "s", "firstKeptId": "a", "tokensBefore": 3})
    check_fields("compaction", {"summary": "s", "firstKeptId": "a", "tokensBefore": 3, "usage": {}})
    with pytest.raises(
        ValueError, match="a compaction entry's fields are wrong: missing firstKeptId"
    ):
        check_fields("compaction", {"summary": "s", "tokensBefore": 3})
    with pytest.raises(ValueError, match="unknown modelID"):
        check_fields("modelChange", {"api": "openai", "modelID": "x"})
    with pytest.raises(ValueError, match=r"Expected `int`, got `str` - at `\$.tokensBefore`"):
        check_fields("compaction", {"summary": "s", "firstKeptId": "a", "tokensBefore": "3"})
    with pytest.raises(ValueError, match="a label entry's fields are wrong"):
        check_fields("label", {"targetId": 7, "label": None})
    with pytest.raises(ValueError, match="'note' is not a kind of session entry"):
        check_fields("note", {})


def test_a_wrong_entry_writes_nothing(tmp_path: Path) -> None:
    log = SessionLog.create(tmp_path, str(tmp_path))
    try:
        before = log.path.read_bytes()
        with pytest.raises(ValueError, match="unknown target"):
            log.append_many_sync(
                [("sessionInfo", {"name": "ok"}), ("label", {"target": "x", "label": None})]
            )
        assert log.path.read_bytes() == before, "the good entry of the batch is not written either"
        log.append_sync("sessionInfo", {"name": "ok"})
        assert log.path.read_bytes() != before
    finally:
        log.close()
