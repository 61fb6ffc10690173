"""The client tests' fixtures are what the real server sends, now.

``tests/support/record_run.py`` drives a real ``crank serve`` through one run (text,
thinking, a failing command, a retry, an edit asked about and allowed, a re-test, a
steer, clear and abort) and writes the events, the permission question and the answers
the VS Code tests (``vscode-client/test/fixtures/run.json``) and the Neovim spec
(``nvim-client/tests/fixtures/run.json``) feed on. This test records again into a
temporary folder and fails when a checked-in fixture differs, as the types.ts
freshness test does for the types: refresh with ``python -m tests.support.record_run``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

from crank.workspace import schema
from tests.support import record_run


def _read(path: Path) -> Any:
    return json.loads(path.read_text("utf-8"))


def _validator(ref: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator({"$defs": schema.build()["$defs"], "$ref": ref})


async def test_the_checked_in_fixtures_are_what_the_server_sends_now(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    recording = await record_run.record(tmp_path / "run")  # tmp_path is a real path
    written = record_run.write(recording, tmp_path / "out")
    fresh = {path.relative_to(tmp_path / "out"): _read(path) for path in written}
    for path, new in fresh.items():
        old = record_run.comparable(_read(record_run.REPO / path))
        stale = f"{path} is stale: run python -m tests.support.record_run"
        assert record_run.comparable(new) == old, stale


def _split(steps: list[dict[str, Any]]) -> dict[str, Any]:
    """The Neovim fixture's one list as the three parts ``comparable`` walks."""
    return {"untilPermission": steps, "afterAllow": [], "afterStop": []}


def test_the_fixture_fits_the_schema() -> None:
    """Every recorded event envelope, the permission question and the answers kept
    validate against docs/protocol.schema.json (the contract the clients are typed by)."""
    fixture = _read(record_run.REPO / record_run.VSCODE_FIXTURE)
    built = schema.build()
    event = _validator(built["notifications"]["crank/event"]["params"]["$ref"])
    question = _validator(built["serverRequests"]["crank/requestPermission"]["params"]["$ref"])
    steps = fixture["untilPermission"] + fixture["afterAllow"] + fixture["afterStop"]
    assert any("request" in step for step in steps)
    for step in steps:
        validator = event if "notify" in step else question
        errors = [
            f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(step["params"])
        ]
        assert not errors, (step, errors)
    answers = {
        "clearQueue": "crank/clearQueue",
        "abort": "crank/abort",
        "messages": "crank/messages",
        "changes": "crank/changes",
        "state": "crank/state",
    }
    for key, method in answers.items():
        result = _validator(built["requests"][method]["result"]["$ref"])
        errors = [
            f"{list(e.absolute_path)}: {e.message}"
            for e in result.iter_errors(fixture["answers"][key])
        ]
        assert not errors, (method, errors)
