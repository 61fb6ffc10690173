"""Package namespaces that import a module only when one of its names is first used.

Why: ``crank serve`` must answer ``initialize`` without paying for what that answer
does not need (issue 18). A package ``__init__`` that imports all its modules makes
every submodule import pay for all of them: importing ``crank.workspace.errors`` ran
``crank/workspace/__init__.py``, which imported the host, and through it the vendors,
httpx, the tools, the session log, the prompt watcher and yaml.

What is promised: ``from crank.pkg import Name`` and ``crank.pkg.Name`` give the very
object the eager import gave, importing the module that defines it on first use (and
caching it in the package). Each lazy package also imports its names under
``TYPE_CHECKING``, for the type checker and readers; ``tests/lsp/test_startup.py``
checks that the two lists agree and that every name resolves.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def exports(
    package: str, modules: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``; ``modules`` maps each
    relative module (``".host"``) to the public names it defines."""
    owner = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = owner.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(owner) | set(vars(sys.modules[package])))

    return __getattr__, __dir__
