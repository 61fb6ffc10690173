"""The contract's types checked at the boundary (``crank.workspace.checked``): every
field in the type's order, the path of the first wrong one, extra fields let through."""

from __future__ import annotations

from typing import Any

import pytest

from crank.workspace import CrankError
from crank.workspace.checked import check
from crank.workspace.contract import REQUESTS, PromptParams, RemoveQueuedParams, SetModelParams


def refusal(value: Any, expected: Any) -> str:
    with pytest.raises(CrankError) as raised:
        check(value, expected)
    return raised.value.message


def test_the_first_wrong_field_in_the_types_order_is_named() -> None:
    # Both are wrong: the type declares api before id, whatever order the JSON has.
    assert "api: must be a string" in refusal({"id": 3, "api": 4}, SetModelParams)
    assert "api: is required" in refusal({"id": "m"}, SetModelParams)
    assert "api: is required" in refusal({"api": None, "id": "m"}, SetModelParams)


def test_nested_items_lists_unions_and_choices() -> None:
    good = {
        "text": "fix it",
        "context": [
            {
                "uri": "file:///a.py",
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": 2, "character": 0}},
            }
        ],
        "images": [{"path": "shot.png"}, {"mimeType": "image/png", "data": "AAAA"}],
        "whileRunning": "steer",
        "somethingNewer": {"any": "thing"},
    }
    check(good, PromptParams)
    bad_line = {
        **good,
        "context": [
            good["context"][0],
            {
                "uri": "file:///b",
                "range": {
                    "start": {"line": "1", "character": 0},
                    "end": {"line": 1, "character": 0},
                },
            },
        ],
    }
    assert "context[1].range.start.line: must be a whole number" in refusal(bad_line, PromptParams)
    assert "whileRunning: must be one of steer, followUp, reject" in refusal(
        {**good, "whileRunning": "later"}, PromptParams
    )
    assert "images[0].data: must be a string" in refusal(
        {**good, "images": [{"mimeType": "image/png", "data": 1}]}, PromptParams
    )
    assert "images[0].mimeType: is required" in refusal(
        {**good, "images": [{"data": "AAAA"}]}, PromptParams
    ), "the shape sharing the most fields is the one meant"
    assert "images[0]: must be an object with" in refusal(
        {**good, "images": [{"name": "x"}]}, PromptParams
    )
    assert "context: must be a list" in refusal({**good, "context": {"uri": "x"}}, PromptParams)


def test_booleans_are_not_numbers_and_numbers_not_booleans() -> None:
    assert "index: must be a whole number" in refusal(
        {"queue": "steering", "index": True}, RemoveQueuedParams
    )
    check({"queue": "steering", "index": 0}, RemoveQueuedParams)


def test_every_request_type_can_be_checked() -> None:
    """No type in the contract uses a form the checker has no rule for."""
    for method, (params, _result) in REQUESTS.items():
        with pytest.raises(CrankError):
            check("not an object", params, method)
        try:
            check({}, params)
        except CrankError as refused:
            assert "is required" in refused.message, (method, refused.message)
