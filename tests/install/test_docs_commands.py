"""Every command the docs tell a person to type is one that exists.

The README once said ``PYTHONPATH=server python bench/<name>.py`` (fails: no anyio) and
docs/tools.md named a path that exists on no user's machine. This check reads every
shell block of the user-facing docs and, line by line: parses ``crank ...`` with Crank's
own argument parser (a renamed or removed option fails here), requires the files a
command names (``bench/x.py``, ``./dev``, ``./test.sh``) to exist, and refuses machine
paths (``/work/...``). Installing with uv or pipx is run for real in
``test_install.py``; the demo and the test command are what CI runs.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from crank.acp.serve import parser as build_acp_parser
from crank.cli.main import build_parser
from crank.lsp.serve import parser as build_serve_parser

ROOT = Path(__file__).resolve().parents[2]
DOCS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "vscode-client" / "README.md",
    ROOT / "nvim-client" / "README.md",
]
SHELL_BLOCK = re.compile(r"^```(?:sh|bash|shell|console)\n(.*?)^```", re.M | re.S)
ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=\S*$")
PLACEHOLDER = re.compile(r"\.\.\.|<[a-z-]+>|/path/to/")
OTHER_PROJECTS = {"llama-server", "ollama", "vllm", "lms"}
"""Model servers the docs show how to start: other projects' commands, not run here
(llama-cpp-python's server is: tests/vendors' real-server tests start it)."""
FETCHING = {"curl", "tar"}
"""Getting another project's release (a recent Neovim, nvim-client/README.md): no
network here; the URL's shape is checked instead."""


def shell_lines() -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        for block in SHELL_BLOCK.findall(doc.read_text(encoding="utf-8")):
            for line in block.splitlines():
                line = line.split(" #", 1)[0].strip()
                if line and not line.startswith("#"):
                    found.append((f"{doc.relative_to(ROOT)}: {line}", line))
    return found


LINES = shell_lines()


def test_the_docs_have_shell_blocks_to_check() -> None:
    assert len(LINES) >= 8
    assert any("crank run" in line for _, line in LINES)


@pytest.mark.parametrize("line", [line for _, line in LINES], ids=[i for i, _ in LINES])
def test_each_documented_command_exists(line: str) -> None:
    assert "/work/" not in line, "a path of one machine, not a user's"
    words = shlex.split(line)
    while words and ASSIGNMENT.match(words[0]):
        words.pop(0)
    if words and words[0] == "export":
        return  # setting the environment; the variables are checked in test_vendors_config
    if not words:
        return
    program, args = words[0], words[1:]
    if program.endswith("/crank") or program == "crank":
        check_crank_command(args)
    elif program.endswith("python") and args and args[0].startswith("bench/"):
        assert (ROOT / args[0]).is_file(), f"{args[0]} does not exist"
    elif program in FETCHING:
        urls = [arg for arg in args if arg.startswith("http")]
        assert all(url.startswith("https://github.com/neovim/neovim/releases/") for url in urls)
        return
    elif program in OTHER_PROJECTS or (program, *args[:2]) == ("python", "-m", "llama_cpp.server"):
        return
    elif program == "git":
        assert args[:1] == ["clone"], "the docs only ever clone"
    elif program in ("./dev", "./test.sh", "uv", "pipx"):
        where = {"./dev": ROOT, "./test.sh": ROOT / "vscode-client"}
        if program in where:
            assert (where[program] / program).is_file()
        if program == "./dev":
            assert args[:1] in (["demo"], ["test"])
    else:
        pytest.fail(f"the docs check does not know the program {program!r}: teach it")


def check_crank_command(args: list[str]) -> None:
    if any(PLACEHOLDER.search(arg) for arg in args):
        args = [arg for arg in args if not PLACEHOLDER.search(arg)]
    if args[:1] == ["serve"]:
        build_serve_parser().parse_args(args[1:])
        return
    if args[:1] == ["acp"]:
        build_acp_parser().parse_args(args[1:])
        return
    if "--version" in args:
        return
    try:
        build_parser().parse_args(args)
    except SystemExit as exit_:
        pytest.fail(f"crank {' '.join(args)}: the parser refuses it (exit {exit_.code})")
