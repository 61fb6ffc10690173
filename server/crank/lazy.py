"""Package namespaces that import a module only when one of its names is first used.

Why: ``crank serve`` must answer ``initialize`` without paying for what that answer
does not need (issue 18). A package ``__init__`` that imports all its modules makes
every submodule import pay for all of them: importing ``crank.workspace.errors`` ran
``crank/workspace/__init__.py``, which imported the host, and through it the vendors,
httpx, the tools, the session log, the prompt watcher and yaml.

What is promised: ``from crank.pkg import Name`` and ``crank.pkg.Name`` give the very
object the eager import gave, importing the module that defines it on first use (and
caching it in the package). Each name is listed once: a lazy package imports its names
under ``TYPE_CHECKING`` as ``from .module import Name as Name`` (for the type checker,
which reads the alias as an export, and for readers), and ``exports`` reads that block
from the package's own source for the map from name to module and for ``__all__``.
``tests/lsp/test_startup.py`` checks that every name resolves to its module's object.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def declared(source: str) -> dict[str, str]:
    """Name to relative module (``".host"``) for each ``from .module import Name`` under
    the top-level ``if TYPE_CHECKING:`` of a package's source. Absolute imports there
    are for annotations only and export nothing."""
    owner: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for sub in node.body:
                if isinstance(sub, ast.ImportFrom) and sub.level >= 1:
                    module = "." * sub.level + (sub.module or "")
                    owner.update({alias.asname or alias.name: module for alias in sub.names})
    return owner


def exports(
    package: str, init_file: str, *local: str
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """The ``__getattr__``, ``__dir__`` and ``__all__`` of ``package``, whose
    ``__init__.py`` is ``init_file``: the names its ``TYPE_CHECKING`` block imports
    relatively, plus ``local`` (names the ``__init__`` defines itself)."""
    owner = declared(Path(init_file).read_text(encoding="utf-8"))

    def __getattr__(name: str) -> Any:
        module = owner.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(owner) | set(vars(sys.modules[package])))

    return __getattr__, __dir__, sorted([*owner, *local])
