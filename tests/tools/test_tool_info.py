"""Each tool owns what frontends and clients know about it (``ToolInfo``): its kind,
label, the argument that says what a call does, how a result is summed up, whether
it changes files through the edit path, its ``details`` type. Nobody matches names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from crank.acp.translate import tool_kind, tool_title
from crank.agent.tools import Tool
from crank.cli.render import summarize
from crank.tools import ToolContext, standard_tools
from crank.tools.info import all_tool_info, tool_info
from crank.tools.notes import make_note_tools
from crank.tools.recall import make_recall
from crank.workspace import Permissions
from crank.workspace.schema import build


class _Nothing:
    def __getattr__(self, name: str) -> Any:  # a source no test call reaches
        raise AssertionError(name)


def _every_tool(root: Path) -> list[Tool]:
    nothing: Any = _Nothing()
    return [*standard_tools(ToolContext(root)), *make_note_tools(nothing), make_recall(nothing)]


def test_every_tool_carries_its_own_info_and_the_registry_is_it(tmp_path: Path) -> None:
    tools = _every_tool(tmp_path)
    for tool in tools:
        assert tool.info is not None and tool.info.name == tool.name, tool.name
        assert tool_info(tool.name) is tool.info
    assert sorted(all_tool_info()) == sorted(tool.name for tool in tools)


def test_the_frontends_read_the_same_facts_the_name_tables_held() -> None:
    """The tables this replaced (ACP's TOOL_KINDS, the CLI's ARGUMENT_SHOWN,
    permissions' EDIT_TOOLS, four ``== "bash"`` checks) said exactly this."""
    kinds = {"read": "read", "ls": "read", "write": "edit", "edit": "edit", "bash": "execute"}
    kinds |= {"grep": "search", "find": "search", "recall": "other", "note_save": "other"}
    assert {name: tool_kind(name) for name in kinds} == kinds
    shown = {"read": "path", "write": "path", "edit": "path", "ls": "path", "bash": "command"}
    shown |= {"grep": "pattern", "find": "pattern"}
    assert {name: tool_info(name).shows for name in shown} == shown
    assert tool_info("recall").shows is None
    assert [n for n, info in all_tool_info().items() if info.edits_files] == ["write", "edit"]
    assert [n for n, info in all_tool_info().items() if info.runs_commands] == ["bash"]
    assert tool_title("bash", {"command": "make test\nmore"}) == "bash: make test"
    assert tool_title("edit", {"path": "a.py"}) == "edit a.py"
    assert summarize("bash", "a\nb\nc") == ["b", "c"]
    assert summarize("read", "a\nb\nc") == ["3 lines"]
    assert summarize("grep", "a:1: x\nb:2: y") == ["a:1: x, b:2: y"]


def test_a_tool_nobody_owns_is_kind_other_and_never_auto_allowed(tmp_path: Path) -> None:
    assert tool_kind("mcp__server__tool") == "other"
    assert not tool_info("outside").edits_files
    perms = Permissions(tmp_path, "autoEdit", tmp_path / "rules.json")
    edit: Any = {"toolName": "edit", "arguments": {}, "preview": {"kind": "diff", "path": "a"}}
    other: Any = {**edit, "toolName": "outside"}
    assert not perms.needs_asking(edit) and perms.needs_asking(other)


def test_the_metadata_travels_in_the_contract(tmp_path: Path) -> None:
    schema = build()
    state = schema["$defs"]["StateResult"]["properties"]
    assert state["tools"]["items"] == {"$ref": "#/$defs/ToolInfoJson"}
    for info in all_tool_info().values():
        if info.details is not None:
            assert info.details.__name__ in schema["$defs"], info.name
    assert tool_info("bash").to_json() == {
        "name": "bash",
        "kind": "execute",
        "label": "Run command",
        "shows": "command",
        "result": "last_lines",
        "editsFiles": False,
        "details": "CommandDetails",
    }
