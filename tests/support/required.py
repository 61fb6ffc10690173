"""What a suite needs from the machine (the command sandbox, ripgrep), and what happens
when it is missing: a skip that says why on a developer's machine, a failure in CI
(``CI`` set, as every CI service does), where a suite skipped in silence would be a
security check that never ran. Used through ``@pytest.mark.requires("sandbox")`` or
``requires("rg")``; ``tests/conftest.py`` applies it."""

from __future__ import annotations

import os
from collections.abc import Callable

from crank.tools.sandbox import probe
from crank.tools.search import ripgrep

__all__ = ["NEEDS", "in_ci", "missing"]


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _sandbox() -> str | None:
    status = probe()
    return None if status.available else f"the command sandbox is unavailable: {status.detail}"


def _ripgrep() -> str | None:
    """Where grep finds it (``crank.tools.search.ripgrep``: on PATH or beside this
    Python, where the dev dependency's wheel puts it), not a second guess of it."""
    return None if ripgrep() else "ripgrep (rg) is not installed"


NEEDS: dict[str, Callable[[], str | None]] = {"sandbox": _sandbox, "rg": _ripgrep}
"""Each requirement by name, to the sentence saying why it is missing (None: present)."""


def missing(*names: str) -> str | None:
    """Why the first of ``names`` is missing here, or None when all are present."""
    for name in names:
        why = NEEDS[name]()
        if why is not None:
            return why
    return None
