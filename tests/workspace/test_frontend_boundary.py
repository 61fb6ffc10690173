"""The frontends (crank.lsp, crank.acp, crank.cli) drive the workspace only through
its public face (``crank.workspace.Workspace``), which the import contract cannot see:
attribute access is checked here, on the source's syntax tree.

A frontend fails this test when it
- names one of the host's parts (the harness, the permission rules, the command
  catalog, the model configuration...) as an attribute of anything;
- reads an attribute of a host (``host.x``, ``self.host.x``) that ``Workspace`` does not
  declare;
- reads a private attribute (``x._y``) of anything but ``self``, ``cls`` or ``super()``,
  except the few listed in ``ALLOWED`` with the reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

from crank.workspace import Workspace

SERVER = Path(__file__).resolve().parents[2] / "server" / "crank"
FRONTENDS = ("lsp", "acp", "cli")
HOST_PARTS = frozenset(
    {
        "harness",
        "permissions",
        "catalog",
        "model_config",
        "approvals",
        "ctx",
        "store",
        "sandbox_status",
        "watcher",
        "notes",
        "stream",
    }
)
"""``WorkspaceHost``'s parts: its own business, never a frontend's."""
ALLOWED = {
    ("lsp/pygls_adapter.py", "protocol"): "the one adapter over pygls's own internals",
    ("cli/demo.py", "argparse"): "argparse._SubParsersAction, a type in a signature",
    ("cli/run.py", "argparse"): "the same",
    ("cli/serve.py", "argparse"): "the same",
    ("cli/sessions.py", "argparse"): "the same",
    ("cli/mcp.py", "argparse"): "the same",
    ("acp/serve.py", "os"): "os._exit, public despite its name: the end after a signal, "
    "when the stdin thread still blocks in a read and interpreter shutdown would abort",
    ("lsp/serve.py", "os"): "os._exit, public despite its name: the end once all is closed "
    "and written, without the interpreter's teardown (serve.leave)",
}
PUBLIC = frozenset(name for name in dir(Workspace) if not name.startswith("_")) | frozenset(
    Workspace.__annotations__
)


def _base(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super":
        return "super"  # an override calling what it overrides: its own class's business
    return ""


def violations(source: str, where: str) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute):
            continue
        base, name, line = _base(node.value), node.attr, f"{where}:{node.lineno}"
        if name in HOST_PARTS:
            found.append(f"{line}: .{name} is a part of the workspace host")
        elif base == "host" and name not in PUBLIC:
            found.append(f"{line}: host.{name} is not in the Workspace protocol")
        elif (
            name.startswith("_")
            and not name.startswith("__")
            and base not in ("self", "cls", "super")
            and (where, base) not in ALLOWED
        ):
            found.append(f"{line}: {base}.{name} is private")
    return found


def test_no_frontend_reaches_past_the_workspace_api() -> None:
    found: list[str] = []
    for frontend in FRONTENDS:
        for path in sorted((SERVER / frontend).rglob("*.py")):
            where = str(path.relative_to(SERVER))
            found += violations(path.read_text("utf-8"), where)
    assert found == [], "\n".join(found)


def test_the_scan_catches_each_kind_of_reach() -> None:
    """What today's ACP did before it used the workspace API, and a private read."""
    bad = (
        "def f(host, session, other):\n"
        "    host.harness.clear_queue()\n"
        "    session.host.permissions.mode\n"
        "    session.host.catalog.commands()\n"
        "    host.session.log\n"
        "    other._peer\n"
    )
    found = violations(bad, "acp/x.py")
    assert len(found) == 5, found
    assert violations("def f(self, host):\n    host.clear_queue()\n    self._x\n", "a") == []
