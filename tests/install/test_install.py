"""Installing the ``crank`` command from a checkout, the two ways the README gives.

Each tool installs into folders of this test's own (a fresh HOME, tool and bin folders),
as on a machine that never had Crank, then the installed ``crank`` answers ``--version``
and runs one offline prompt. The packages come from the registry, as for a user."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from crank import __version__

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def tool_env(tmp: Path, tool: str) -> dict[str, str]:
    env = {
        "PATH": f"{BIN}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(tmp / "home"),
        "XDG_CONFIG_HOME": str(tmp / "home" / ".config"),
        "XDG_DATA_HOME": str(tmp / "home" / ".local" / "share"),
    }
    if tool == "uv":
        env.update(
            UV_TOOL_DIR=str(tmp / "tools"),
            UV_TOOL_BIN_DIR=str(tmp / "bin"),
            # The package cache is shared between runs; the install itself is fresh.
            UV_CACHE_DIR=str(Path.home() / ".cache" / "crank-test" / "uv"),
            UV_NATIVE_TLS="1",
        )
    else:
        env.update(
            PIPX_HOME=str(tmp / "tools"),
            PIPX_BIN_DIR=str(tmp / "bin"),
            PIPX_MAN_DIR=str(tmp / "man"),
        )
    for name in ("PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "SSL_CERT_FILE"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


@pytest.mark.slow
@pytest.mark.parametrize("tool", ["uv", "pipx"])
def test_installs_from_the_checkout_and_runs(tmp_path: Path, tool: str) -> None:
    program = shutil.which(tool, path=str(BIN)) or shutil.which(tool)
    if program is None:
        pytest.skip(f"{tool} is not installed here (`./dev test` installs it with the dev extras)")
    env = tool_env(tmp_path, tool)
    install = [program, "tool", "install"] if tool == "uv" else [program, "install"]
    done = subprocess.run(
        [*install, "--python", sys.executable, str(ROOT)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    crank = tmp_path / "bin" / "crank"
    version = subprocess.run([crank, "--version"], env=env, capture_output=True, text=True)
    assert version.stdout.strip() == f"crank {__version__}"

    project = tmp_path / "project"
    project.mkdir()
    (project / "s.json").write_text(json.dumps({"replies": [{"text": "installed and working"}]}))
    run = subprocess.run(
        [crank, "run", "--script", "s.json", "hello"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == "installed and working\n"
