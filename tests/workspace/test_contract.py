"""The wire contract's generated files are fresh, and docs/protocol.md names exactly
what the contract module lists (crank.workspace.contract, crank.workspace.schema)."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from crank.workspace import contract, schema

from .test_host import AnsweringEditor, scripted_host
from .test_recorded_events import REPLIES

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def test_schema_and_types_are_generated_from_the_contract() -> None:
    text = schema.dumps(schema.build())
    assert schema.SCHEMA_FILE.read_text(encoding="utf-8") == text, (
        "docs/protocol.schema.json is stale: run python -m crank.workspace.schema"
    )
    assert schema.TYPES_FILE.read_text(encoding="utf-8") == schema.render(json.loads(text)), (
        "vscode-client/src/protocol/types.ts is stale: run python -m crank.workspace.schema"
    )
    assert schema.LUA_FILE.read_text(encoding="utf-8") == schema.render_lua(json.loads(text)), (
        "nvim-client/lua/crank/types.lua is stale: run python -m crank.workspace.schema"
    )
    assert schema.main(["--check"]) == 0


def test_the_schema_is_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(schema.build())


def _table(section: str) -> list[str]:
    """The first column's names of the first table under the heading ``section``."""
    body = DOC.read_text(encoding="utf-8").split(f"\n## {section}\n", 1)[1]
    names: list[str] = []
    for line in body.split("\n## ", 1)[0].splitlines():
        if line.startswith("| `"):
            names += re.findall(r"`([^`]+)`", line.split("|")[1])
    return names


def test_protocol_md_lists_every_request_and_no_other() -> None:
    assert sorted(_table("Requests, client to server")) == sorted(contract.REQUESTS)


def test_protocol_md_lists_every_event_and_no_other() -> None:
    assert sorted(_table("Notifications, server to client")) == sorted(_built()["events"])


def test_protocol_md_names_every_server_request_and_notification() -> None:
    text = DOC.read_text(encoding="utf-8")
    for method in [*contract.SERVER_REQUESTS, *contract.NOTIFICATIONS]:
        assert f"`{method}`" in text, method


@cache
def _built() -> dict[str, Any]:
    return schema.build()


def _validator(ref: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator({"$defs": _built()["$defs"], "$ref": ref})


def _check(shape: dict[str, str], value: Any, what: str) -> None:
    errors = list(_validator(shape["$ref"]).iter_errors(value))
    assert not errors, f"{what}: {[f'{list(e.absolute_path)}: {e.message}' for e in errors]}"


async def test_what_a_real_host_sends_fits_the_schema(tmp_path: Path) -> None:
    """A scripted session through the real WorkspaceHost (the model is the stand-in,
    the wire shapes are under test): every event envelope, permission question and
    answer, and the results of the reading requests validate against the schema."""
    editor = AnsweringEditor({"call_1": "allow"})
    host = scripted_host(tmp_path, editor, REPLIES)
    requests, server = _built()["requests"], _built()["serverRequests"]
    await host.start()
    try:
        answer = host.prompt_run("write a and b")
        _check(requests["crank/prompt"]["result"], answer, "crank/prompt")
        run = host.harness.current_run
        assert run is not None
        await run.wait()
        _check(requests["crank/compact"]["result"], await host.compact(None), "crank/compact")
        _check(requests["crank/state"]["result"], host.state(), "crank/state")
        _check(requests["crank/messages"]["result"], await host.messages(), "crank/messages")
        _check(requests["crank/tree"]["result"], await host.tree(), "crank/tree")
        _check(requests["crank/commands"]["result"], host.commands(), "crank/commands")
        _check(requests["crank/sessions"]["result"], await host.sessions(), "crank/sessions")
        _check(requests["crank/models"]["result"], await host.models(), "crank/models")
        _check(requests["crank/systemPrompt"]["result"], host.system_prompt(), "crank/systemPrompt")
        _check(requests["crank/steer"]["result"], host.follow_up("later"), "crank/followUp")
        _check(requests["crank/clearQueue"]["result"], host.clear_queue(), "crank/clearQueue")
        _check(requests["crank/abort"]["result"], await host.abort(), "crank/abort")
        _check(
            requests["crank/setPermissionMode"]["result"],
            await host.set_permission_mode("readOnly"),
            "crank/setPermissionMode",
        )
        _check(requests["crank/newSession"]["result"], host.new_session(), "crank/newSession")
    finally:
        await host.close()
    assert editor.events and editor.questions
    for envelope in editor.events:
        _check(_built()["notifications"]["crank/event"]["params"], envelope, "crank/event")
    for question in editor.questions:
        _check(server["crank/requestPermission"]["params"], question, "crank/requestPermission")
    _check(server["crank/requestPermission"]["result"], {"decision": "allowSession"}, "answer")


def test_the_schema_says_what_the_hand_copied_types_got_wrong() -> None:
    """types.ts had ``stopReason`` as any string, no ``errorKind``, and a first
    toolCall delta without its id and name: the schema refuses the first and knows the
    others."""
    end = _validator("#/$defs/AgentEnd")
    assert end.is_valid({"type": "agent_end", "stopReason": "stop"})
    assert not end.is_valid({"type": "agent_end", "stopReason": "finished"})
    assistant = _built()["$defs"]["AssistantMessage"]["properties"]
    assert assistant["errorKind"] == {"$ref": "#/$defs/ErrorKind"}
    delta = _built()["$defs"]["Delta"]["properties"]
    assert {"toolCallId", "toolName"} <= set(delta)
    steer = _built()["requests"]["crank/steer"]["params"]
    assert steer == {"$ref": "#/$defs/QueueParams"}
    assert "images" in _built()["$defs"]["QueueParams"]["properties"]


def test_the_lua_client_names_only_types_the_contract_declares() -> None:
    """lua-language-server cannot be installed here (no npm, PyPI or Debian package), so
    this is the check within reach: every ``crank.Name`` an annotation in the Neovim
    client uses is declared, by the generated ``types.lua`` or by the plugin's own
    classes (``crank.Chat``, ``crank.Workspace``...), and no plugin class takes a name
    the contract has."""
    generated = schema.LUA_FILE.read_text(encoding="utf-8")
    declaring = re.compile(r"^---@(?:class|alias) (crank\.\w+)", re.M)
    wire = set(declaring.findall(generated))
    assert {"crank.EventParams", "crank.PermissionRequest", "crank.StopReason"} <= wire
    own: set[str] = set()
    used: dict[str, set[str]] = {}
    for path in sorted(schema.LUA_FILE.parent.rglob("*.lua")):
        if path == schema.LUA_FILE:
            continue
        text = path.read_text(encoding="utf-8")
        own |= set(declaring.findall(text))
        for line in text.splitlines():
            if line.startswith("---@"):
                for name in re.findall(r"\bcrank\.[A-Z]\w*", line):
                    used.setdefault(name, set()).add(path.name)
    assert not own & wire, f"a plugin class has a contract type's name: {own & wire}"
    missing = {name: sorted(files) for name, files in used.items() if name not in wire | own}
    assert not missing, missing
    assert {"crank.EventParams", "crank.PermissionRequest"} <= set(used), "annotated"
    referred = set(re.findall(r"\bcrank\.[A-Z]\w*", generated))
    assert referred <= wire, referred - wire
