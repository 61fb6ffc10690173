"""What ``./dev test`` leaves behind can be taken back, and does not end up in an sdist."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from .test_install import tool_env

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def tracked_copy(into: Path) -> Path:
    """The checkout's tracked files, as a fresh clone has them."""
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, files):
        source = ROOT / name.decode()
        if source.is_file() and not source.is_symlink():
            target = into / name.decode()
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return into


def leftovers(repo: Path, home: Path) -> list[Path]:
    """The folders a ./dev test run makes, each with a file in it."""
    made = [
        repo / ".venv",
        repo / "nvim-client" / ".nvim-venv",
        repo / "nvim-client" / ".nvim-venv-0.11",
        repo / "nvim-client" / ".test-tmp",
        repo / "vscode-client" / "node_modules",
        repo / "vscode-client" / "build",
        home / ".cache" / "crank-test" / "code-server-4.100.3",
    ]
    for folder in made:
        folder.mkdir(parents=True)
        (folder / "big.bin").write_bytes(b"x" * 1000)
    return made


def test_dev_clean_removes_what_the_test_command_made_and_nothing_else(tmp_path: Path) -> None:
    repo = tracked_copy(tmp_path / "repo")
    home = tmp_path / "home"
    made = leftovers(repo, home)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home)}
    done = subprocess.run(
        ["bash", str(repo / "dev"), "clean"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert [path for path in made if path.exists()] == []
    assert (repo / "server" / "crank" / "__init__.py").is_file()
    assert (repo / "nvim-client" / "lua").is_dir()
    assert "removing" in done.stdout


@pytest.mark.slow
def test_an_sdist_holds_the_package_not_the_test_environments(tmp_path: Path) -> None:
    uv = shutil.which("uv", path=str(BIN)) or shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not installed here (`./dev test` installs it with the dev extras)")
    repo = tracked_copy(tmp_path / "repo")
    leftovers(repo, tmp_path / "home")
    done = subprocess.run(
        [uv, "build", "--sdist", "--out-dir", str(tmp_path / "dist"), str(repo)],
        env=tool_env(tmp_path, "uv"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [sdist] = (tmp_path / "dist").glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    assert any(name.endswith("server/crank/__init__.py") for name in names)
    assert any(name.endswith("server/crank/cli/sample_project/stats.py") for name in names)
    strays = [n for n in names if any(p in n for p in (".nvim-venv", "node_modules", "/build/"))]
    assert strays == []
    assert sdist.stat().st_size < 2_000_000, f"{sdist.stat().st_size} bytes"
