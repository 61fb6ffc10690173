"""The terminal as ``crank run``'s editor: no buffers, nobody to ask.

``crank run`` drives the same ``WorkspaceHost`` as ``crank serve`` and ``crank acp``;
this is its ``EditorClient``. There are no open documents, so the tools read and write
the disk; commands run here (in the sandbox). The host's ``ApprovalRouter`` asks it
what the permission mode (``ask``) and remembered rules leave open, and it answers with
the policy the README promises, asking nobody:

- a write, an edit or a confined command: yes, once (nothing is remembered);
- a path outside the current directory: no (the file tools stay in it);
- a command that would run unconfined (the question's ``unconfined``: there is no
  sandbox here): no, saying that ``--no-sandbox`` allows it. With ``--no-sandbox`` the
  sandbox mode is ``off``, nothing warns, and the command runs. Any other ``warning``
  (a remembered rule that does not cover a chained command) is for a person to read
  and changes nothing here.

Events are queued for the command to print (``events``), in the order they came.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any, TextIO

from crank.tools import (
    Documents,
    EditorFiles,
    EditorTerminal,
    EditRefused,
    NoDocuments,
    OpenDocuments,
)
from crank.workspace.stream import EventParams

OUTSIDE_REFUSED = (
    "crank run keeps to the current directory; run it from a folder that holds the file"
)
UNCONFINED_REFUSED = (
    "{warning} crank run does not run commands without a sandbox: "
    "run crank run --no-sandbox to allow unconfined commands"
)


def answer(params: dict[str, Any]) -> dict[str, Any]:
    """``crank run``'s answer to one ``crank/requestPermission`` question."""
    if params.get("toolName") == "outside":
        return {"decision": "reject", "reason": OUTSIDE_REFUSED}
    if params.get("unconfined") is True:
        warning = params.get("warning")
        said = warning if isinstance(warning, str) else "This command would run unconfined."
        return {"decision": "reject", "reason": UNCONFINED_REFUSED.format(warning=said)}
    return {"decision": "allow"}


class TerminalClient:
    """``EditorClient`` for ``crank run``: events into ``events``, log lines to ``err``."""

    def __init__(self, err: TextIO = sys.stderr) -> None:
        self._err = err
        self._documents = NoDocuments()
        self._files = OpenDocuments(self._documents)
        self.events: asyncio.Queue[EventParams] = asyncio.Queue()

    @property
    def documents(self) -> Documents:
        return self._documents

    @property
    def files(self) -> EditorFiles:
        return self._files

    @property
    def terminal(self) -> EditorTerminal | None:
        return None

    async def apply_edit(self, path: Path, old_text: str, new_text: str) -> str | None:
        raise EditRefused(f"{path} is not open in an editor: crank run writes the disk")

    def send_event(self, params: EventParams) -> None:
        self.events.put_nowait(params)

    async def ask_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        return answer(params)

    def commands_changed(self, workspace: str) -> None:
        pass  # nobody lists the commands of a single run

    def log(self, message: str) -> None:
        prefix = "Crank: "
        text = message[len(prefix) :] if message.startswith(prefix) else message
        print(f"crank: {text}", file=self._err, flush=True)
