"""A command's environment is built from an allow-list (issue 26 item 7): a key whose
name ends in none of the old deny-list's suffixes (``AZURE_OPENAI_KEY``) reached
commands; now only PATH, HOME, LANG, LC_*, TERM (and a few like them) and the names
of ``sandbox.env`` do, confined (real bubblewrap: a machine without it fails here,
it does not skip) or not."""

from __future__ import annotations

from pathlib import Path

import pytest

from crank.tools import ToolContext, standard_tools
from crank.tools.sandbox import SandboxMode, SandboxSettings, probe

from .conftest import call


@pytest.mark.parametrize("mode", ["workspace-write", "off"])
async def test_only_allow_listed_names_reach_a_command(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: SandboxMode
) -> None:
    if mode != "off":
        assert probe().available, f"the sandbox tests need bubblewrap: {probe().detail}"
    monkeypatch.setenv("AZURE_OPENAI_KEY", "azure-secret-value")
    monkeypatch.setenv("MY_PROJECT_SETTING", "wanted-value")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    settings = SandboxSettings(mode=mode, env=("MY_PROJECT_SETTING",))
    ctx = ToolContext(root, output_dir=tmp_path / "out", sandbox=lambda: settings)
    result = await call(standard_tools(ctx), "bash", {"command": "env"})
    assert not result.is_error, result.content
    names = {line.split("=", 1)[0] for line in result.content.splitlines() if "=" in line}
    assert "azure-secret-value" not in result.content
    assert "MY_PROJECT_SETTING" in names and "LC_ALL" in names and "PATH" in names
