"""bash against real subprocesses, in the sandbox where the machine has one (the
default). Process-group checks look for a marker in every /proc/*/cmdline
(tests/support/processes.py), since a sandboxed command's own pids are not the host's."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from crank.agent.model import AbortSignal
from crank.agent.tools import Tool
from crank.tools import Decision, ToolContext, standard_tools
from tests.support.processes import holder, marker, survivors

from .conftest import Approvals, call


def text_of(path: Path) -> str:
    return path.read_text().strip() if path.exists() else ""


async def test_output_and_exit_code(root: Path, tools: list[Tool]) -> None:
    ok = await call(tools, "bash", {"command": "echo out; echo err >&2; pwd"})
    assert not ok.is_error
    assert ok.content == f"out\nerr\n{root}"
    assert ok.details is not None and ok.details["exitCode"] == 0
    bad = await call(tools, "bash", {"command": "echo nope; exit 3"})
    assert bad.is_error
    assert bad.content == "nope\n\nCommand exited with code 3."


async def test_no_output(tools: list[Tool]) -> None:
    result = await call(tools, "bash", {"command": "true"})
    assert result.content == "(no output)"


async def test_streams_before_the_command_ends(root: Path, tools: list[Tool]) -> None:
    seen: list[str] = []

    def on_update(text: str) -> None:
        seen.append(text)
        if "first" in "".join(seen):
            (root / "go").touch()

    command = "echo first; while [ ! -f go ]; do sleep 0.02; done; echo second"
    result = await call(tools, "bash", {"command": command}, on_update=on_update)
    assert result.content == "first\nsecond"
    assert "".join(seen) == "first\nsecond\n"
    assert seen[0].startswith("first")


async def wait_for_survivor(mark: str) -> None:
    for _ in range(1000):
        if survivors(mark):
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"no process {mark} ever ran")


async def test_timeout_kills_the_group(root: Path, tools: list[Tool]) -> None:
    mark = marker()
    command = f"{holder(mark)} echo started; wait"
    result = await call(tools, "bash", {"command": command, "timeout": 1})
    assert result.is_error
    assert "timed out after 1 seconds" in result.content
    assert result.content.startswith("started")
    assert survivors(mark) == []


async def test_cancellation_kills_the_group(root: Path, tools: list[Tool]) -> None:
    signal = AbortSignal()
    mark = marker()
    command = f"(trap '' TERM; exec -a {mark} sleep 300) & wait"
    task = asyncio.create_task(call(tools, "bash", {"command": command}, signal=signal))
    await wait_for_survivor(mark)
    signal.abort()
    task.cancel()
    result = await task
    assert result.is_error and "Aborted" in result.content
    assert survivors(mark) == []


async def test_cancellation_propagates_when_not_an_abort(root: Path, tools: list[Tool]) -> None:
    mark = marker()
    task = asyncio.create_task(call(tools, "bash", {"command": f"exec -a {mark} sleep 300"}))
    await wait_for_survivor(mark)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert survivors(mark) == []


async def test_long_output_keeps_tail_and_saves_all(tmp_path: Path, tools: list[Tool]) -> None:
    result = await call(tools, "bash", {"command": "seq 1 5000"})
    assert not result.is_error
    assert result.content.split("\n\n")[0].endswith("4999\n5000")
    assert "1\n2\n" not in result.content
    saved = result.details and result.details["fullOutputPath"]
    assert saved and f"Full output saved to {saved}" in result.content
    assert Path(saved).parent == tmp_path / "outputs"
    assert text_of(Path(saved)) == "".join(f"{n}\n" for n in range(1, 5001)).strip()
    assert "of 5000 lines" in result.content


async def test_rejected_command_does_not_run(root: Path) -> None:
    approvals = Approvals(Decision.reject("too risky"))
    tools = standard_tools(ToolContext(root, approve=approvals))
    result = await call(tools, "bash", {"command": "touch ran"})
    assert result.is_error and "too risky" in result.content
    assert not (root / "ran").exists()
    assert approvals.requests[0]["preview"] == {"kind": "command", "command": "touch ran"}


async def test_pager_is_disabled(tools: list[Tool]) -> None:
    result = await call(tools, "bash", {"command": "echo $PAGER $GIT_PAGER"})
    assert result.content == "cat cat"


async def test_commands_never_see_the_providers_keys(
    tools: list[Tool], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-never-shown")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-oai-never-shown")
    monkeypatch.setenv("PROJECT_SETTING", "kept")
    out = await call(tools, "bash", {"command": "env"})
    assert "never-shown" not in out.content
    assert "PROJECT_SETTING" not in out.content  # only sandbox.env names are added


async def test_saved_output_is_private_to_the_user(tmp_path: Path, tools: list[Tool]) -> None:
    # The default folder is in the shared temp directory, and a command's output can
    # hold anything it printed (an environment, a token): only its owner may read it.
    outputs = tmp_path / "outputs"
    outputs.mkdir(mode=0o755)
    outputs.chmod(0o755)
    result = await call(tools, "bash", {"command": "seq 1 5000"})
    saved = Path(result.details["fullOutputPath"]) if result.details else None
    assert saved is not None and saved.parent == outputs
    assert saved.stat().st_mode & 0o777 == 0o600
    assert outputs.stat().st_mode & 0o777 == 0o700


async def test_output_is_not_saved_through_a_link(root: Path, tmp_path: Path) -> None:
    # Someone who made the predictable folder name a link first does not get the output.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "outputs").symlink_to(elsewhere)
    tools = standard_tools(ToolContext(root, output_dir=tmp_path / "outputs"))
    # Far more than a pipe holds: the command must keep being read, not stall on it.
    result = await asyncio.wait_for(call(tools, "bash", {"command": "seq 1 300000"}), 60)
    assert not result.is_error  # the command itself succeeded
    assert result.content.split("\n")[-3] == "300000"
    assert "could not be saved" in result.content
    assert str(tmp_path / "outputs") in result.content
    assert list(elsewhere.iterdir()) == []
