"""``crank run``'s answers to permission questions, through the workspace's real
``ApprovalRouter`` and ``crank run``'s ``TerminalClient`` (no mocks: the router asks
the client as the host does).

A command that would run unconfined is refused (``--no-sandbox`` allows it), and the
question says so in its own field, ``unconfined``. ``warning`` is text for a person,
and the session rules use it too: a rule that names the program but does not cover a
chained command. Read as "unconfined", that warning refused a confined command.
"""

from __future__ import annotations

from pathlib import Path

from crank.agent.tools import ToolCall
from crank.cli.terminal import TerminalClient
from crank.tools import ApprovalRequest, approval_request
from crank.workspace.approvals import ApprovalRouter
from crank.workspace.permissions import Permissions

CHAINED = "git status && rm -rf build"


def chained_command() -> ApprovalRequest:
    call = ToolCall("call-1", "bash", {"command": CHAINED})
    return approval_request(call, {"kind": "command", "command": CHAINED})


def router(tmp_path: Path, unconfined: str | None) -> ApprovalRouter:
    permissions = Permissions(tmp_path, "ask", rules_file=tmp_path / "rules.json")
    permissions.session_rules.append({"tool": "bash", "commandPrefix": "git"})
    return ApprovalRouter(
        tmp_path.as_uri(),
        permissions,
        TerminalClient(),
        lambda: ("session-1", "run-1"),
        lambda _request: unconfined,
    )


async def test_a_rule_that_does_not_cover_a_chained_command_is_not_read_as_unconfined(
    tmp_path: Path,
) -> None:
    asked = router(tmp_path, unconfined=None)
    assert asked.permissions.why_asked(chained_command()) is not None  # it warns
    decision = await asked.approve(chained_command())
    assert decision.allowed, decision.reason  # confined: yes, once


async def test_a_command_that_would_run_unconfined_is_refused_with_the_way_out(
    tmp_path: Path,
) -> None:
    asked = router(tmp_path, unconfined="No sandbox: bwrap is missing.")
    decision = await asked.approve(chained_command())
    assert not decision.allowed
    assert decision.reason is not None
    assert decision.reason.startswith("No sandbox: bwrap is missing.")
    assert "crank run --no-sandbox" in decision.reason
