"""Crank: an editor backend for a coding agent.

The layers are the sub-packages (see docs/architecture.md): ``agent`` is the brain,
``session``/``prompt``/``tools``/``vendors`` are the environment, ``workspace`` wires one
harness per folder, ``lsp`` and ``cli`` are the frontends. Imports only point down.
"""

__version__ = "0.1.0"
"""The one place the version is kept: the package metadata and the server read it."""
