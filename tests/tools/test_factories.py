from __future__ import annotations

from pathlib import Path

from crank.agent.tools import spec_of
from crank.tools import ToolContext, read_only_tools, standard_tools


def test_standard_and_read_only_sets(root: Path) -> None:
    ctx = ToolContext(root)
    standard = standard_tools(ctx)
    read_only = read_only_tools(ctx)
    assert [t.name for t in standard] == ["read", "write", "edit", "bash", "ls", "grep", "find"]
    assert [t.name for t in read_only] == ["read", "ls", "grep", "find"]
    assert {t.name for t in standard if t.mutates} == {"write", "edit", "bash"}
    assert not any(t.mutates for t in read_only)
    assert {t.name: t.keep for t in standard}["bash"] == "tail"


def test_read_only_prompt_text_never_names_mutating_tools(root: Path) -> None:
    for tool in read_only_tools(ToolContext(root)):
        words = " ".join([tool.snippet or "", *tool.guidelines, tool.description]).lower()
        for name in ("write", "edit", "bash"):
            assert name not in words.split(), (tool.name, name)
        assert tool.snippet and "\n" not in tool.snippet


def test_schemas_are_valid_and_specs_have_three_keys(root: Path) -> None:
    for tool in standard_tools(ToolContext(root)):
        tool.validator()
        assert set(spec_of(tool)) == {"name", "description", "parameters"}
