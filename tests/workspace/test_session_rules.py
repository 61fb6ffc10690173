"""Session and permanent rules match commands, not text (issue 26 item 4): after
"Allow for this session" on ``ls -la``, each chained or substituted form of the issue
ran X unasked; now each is asked, and the question says why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from crank.workspace import Permissions
from crank.workspace.shell_shape import simple_words


def bash(command: str) -> Any:
    return {"toolName": "bash", "arguments": {}, "preview": {"kind": "command", "command": command}}


CHAINED = [
    "ls && X",
    "ls $(X)",
    "ls `X`",
    "ls | sh -c X",
    "ls > /dev/null & X",
    "ls; X",
    "ls\nX",
    "ls || X",
    "ls <(X)",
    "LD_PRELOAD=/tmp/x.so ls",
    'ls "$(X)"',
    "{ ls; X; }",
    "(ls)",
    "ls 'unterminated",
]


@pytest.mark.parametrize("decision", ["allowSession", "allowAlways"])
@pytest.mark.parametrize("command", CHAINED)
def test_a_rule_for_ls_does_not_cover_a_chained_command(
    tmp_path: Path, decision: str, command: str
) -> None:
    perms = Permissions(tmp_path, "ask", tmp_path / "rules.json")
    perms.remember(bash("ls -la"), decision)
    assert perms.needs_asking(bash(command))
    if command.startswith("ls"):
        why = perms.why_asked(bash(command))
        assert why is not None and "`ls` is allowed" in why, why


@pytest.mark.parametrize(
    "command", ["ls", "ls -la", "ls  -la src/", "ls > /dev/null", "ls 'a b' \"c\"", "ls $HOME"]
)
def test_a_rule_for_ls_covers_simple_ls_commands(tmp_path: Path, command: str) -> None:
    perms = Permissions(tmp_path, "ask", tmp_path / "rules.json")
    perms.remember(bash("ls -la"), "allowSession")
    assert not perms.needs_asking(bash(command))


def test_a_subcommand_rule_compares_words() -> None:
    assert simple_words("git status --short").words == ("git", "status", "--short")
    assert simple_words("git status && rm -rf x").words is None


def test_a_subcommand_rule_covers_only_that_subcommand(tmp_path: Path) -> None:
    perms = Permissions(tmp_path, "ask", tmp_path / "rules.json")
    perms.remember(bash("npm test"), "allowSession")
    assert not perms.needs_asking(bash("npm test -- --watch"))
    assert perms.needs_asking(bash("npm install evil"))
    assert perms.needs_asking(bash("npm test; npm publish"))
