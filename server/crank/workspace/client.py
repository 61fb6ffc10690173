"""What a workspace needs from the editor connection, as one small interface.

The LSP layer implements it; the workspace layer never sees JSON-RPC. Everything here
is about the editor, nothing about agents: sending an event, asking the user,
changing an open buffer, reading the open buffers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from crank.tools import Documents, EditorFiles, EditorTerminal

from .stream import EventParams


class EditorClient(Protocol):
    @property
    def documents(self) -> Documents:
        """The open documents (unsaved text), keyed by resolved path."""
        ...

    @property
    def files(self) -> EditorFiles:
        """How a tool reads the editor's text of one file (``OpenDocuments`` over
        ``documents`` for an editor that announces its open documents)."""
        ...

    @property
    def terminal(self) -> EditorTerminal | None:
        """The editor's terminal for the agent's commands, or None: they run here."""
        ...

    async def apply_edit(self, path: Path, old_text: str, new_text: str) -> str | None:
        """Change an open document through the editor (``workspace/applyEdit``) and have
        the same text on disk when this returns (``crank.tools.ApplyEdit``); raises
        ``crank.tools.EditRefused`` when the editor says no, ``EditNotSaved`` when the
        change is only in the buffer. Returns a sentence for the model, or None."""
        ...

    def send_event(self, params: EventParams) -> None:
        """Deliver one ``crank/event`` (the whole envelope) to the client, in order."""
        ...

    async def ask_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        """Ask the user about one tool call; ``params`` as ``crank/requestPermission``
        takes them. Returns ``{decision, reason?}``. Cancelling the awaiting task
        withdraws the question."""
        ...

    def commands_changed(self, workspace: str) -> None:
        """The workspace's command list changed (a skill or template was added,
        removed or changed): tell the client, which asks for the list again."""
        ...

    def log(self, message: str) -> None:
        """A line for the user's log (a bad skill file, a failed watcher)."""
        ...
