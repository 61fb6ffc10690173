"""bash with an editor terminal (``ToolContext.terminal``): what the editor is handed
and how its answer becomes the tool result.

``StartingTerminal`` stands in for an editor's terminal and really starts the argv it
is given, in an environment holding a provider key as an editor's may; the ACP
terminal over the wire is tested in tests/acp/test_acp_client_capabilities.py.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from crank.tools import TerminalRun, ToolContext, standard_tools
from crank.tools.detached import Detached

from .conftest import Approvals, call

KEY = "sk-ant-api03-editor-environment-key-0123456789"


class StartingTerminal:
    def __init__(self, keep: TerminalRun | None = None) -> None:
        self.argv: list[str] = []
        self.keep = keep
        """Answer this instead of what the command printed (a client's own report)."""

    async def run(
        self, call_id: str, command: Detached, cwd: Path, seconds: float, output_limit: int
    ) -> TerminalRun:
        self.argv = list(command.argv)
        process = await asyncio.create_subprocess_exec(
            *command.argv,
            cwd=cwd,
            env=dict(os.environ, ANTHROPIC_API_KEY=KEY, GITHUB_TOKEN=KEY),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        output, _ = await process.communicate()
        if self.keep is not None:
            return self.keep
        return TerminalRun(output.decode(), process.returncode)


async def test_the_editors_environment_never_reaches_the_command(tmp_path: Path) -> None:
    terminal = StartingTerminal()
    tools = standard_tools(ToolContext(tmp_path, terminal=terminal, approve=Approvals()))
    result = await call(
        tools, "bash", {"command": 'echo "a=${ANTHROPIC_API_KEY:-none} g=${GITHUB_TOKEN:-none}"'}
    )
    assert result.content == "a=none g=none"
    assert Path(terminal.argv[0]).name == "env" and terminal.argv[1] == "-i"
    assert terminal.argv[-2] == "-c", "bash -c COMMAND comes last"
    assert "PAGER=cat" in terminal.argv, "the command's own environment is spelled out"


async def test_the_editors_report_becomes_the_result(tmp_path: Path) -> None:
    killed = TerminalRun("tail of it\n", None, signal="SIGKILL", truncated=True, timed_out=True)
    tools = standard_tools(ToolContext(tmp_path, terminal=StartingTerminal(killed)))
    result = await call(tools, "bash", {"command": "true", "timeout": 5})
    assert result.is_error
    assert result.content.startswith("tail of it")
    assert "timed out after 5 seconds" in result.content
    assert "kept only the last 1024 KB" in result.content
    assert result.details is not None and result.details["exitCode"] == -9
