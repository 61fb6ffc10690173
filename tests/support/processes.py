"""Finding processes a test started, by a marker in their command line.

A command in the sandbox sees its own PID namespace, so the pid it prints (``$!``,
``$$``) is not the pid outside. Tests therefore start their long-lived children as
``(exec -a MARKER sleep 300)`` and look for MARKER in every ``/proc/*/cmdline`` of the
host: that finds a survivor whichever namespace it lives in. Zombies do not count
(they are dead; only their parent's reaping is pending).
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

HOST_PYTHON = os.path.realpath(sys.executable)
"""The interpreter the test venv links to, for a command in the sandbox: the venv may
sit where the sandbox shows an empty /tmp (a checkout under /tmp); this is under /usr."""


def marker(name: str = "crank-test") -> str:
    return f"{name}-{uuid.uuid4().hex[:12]}"


def holder(mark: str, seconds: int = 300) -> str:
    """A shell snippet that starts a process named ``mark`` in the background."""
    return f"(exec -a {mark} sleep {seconds}) &"


def survivors(mark: str, *, in_arguments: bool = False) -> list[int]:
    """Pids of live processes whose name (``argv[0]``) holds ``mark``; with
    ``in_arguments``, whose command line holds it anywhere (a program such as ripgrep,
    which cannot be renamed, found by an argument the test chose, like its pattern)."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        named = cmdline if in_arguments else cmdline.split(b"\0")[0]
        if mark.encode() in named and stat[stat.rfind(")") + 2] != "Z":
            found.append(int(entry.name))
    return found
