"""How the agent's change to an open document reaches the buffer and the disk.

The promise (docs/tools.md, "One truth for files"): when ``apply_edit`` returns, the
editor shows the change as one undoable edit and the disk holds the same text, so the
next command the agent runs (tests, grep, a build) sees it. In order:

1. Refuse, changing nothing, when the file on disk changed outside the editor since it
   was opened or saved and the buffer does not hold that text (saving would overwrite
   one side, writing would lose the other), and when the user has unsaved changes and
   the client cannot save (see 4).
2. ``workspace/applyEdit`` with the smallest ``TextEdit``, against the document's
   version (so the client refuses if the buffer moved); then wait for the client's
   ``didChange`` to bring our copy of the buffer to the new text.
3. A client that declared ``experimental.crank.saveDocuments`` is asked to save it with
   ``crank/saveDocument`` (VS Code: ``TextDocument.save()``; Neovim: ``:write``); the
   server waits for its ``didSave``.
4. Unsaved user changes in that document (a ``didChange`` after the last ``didSave``,
   tracked by ``DocumentSync``, and a buffer that differs from the disk) are saved
   together with the agent's change, and the client is told so in the request
   (``unsavedChanges: true``) and shows a notice; the model is told too. Saving is the
   only way both can be on disk; nothing the user typed is lost, and one undo still
   takes back only the agent's change. A client that cannot save gets a refusal
   instead (step 1): its buffer would otherwise hold text no command sees.
5. A client that cannot save, with a clean buffer: the same text is written to the file
   atomically (keeping a BOM the file had). The editor then shows the buffer as
   modified, with the same text as the disk.

A client that answers ``saved: false`` for a clean buffer gets the disk write of 5; with
the user's changes in it, the change stays in the buffer and the tool reports that it
is not on disk (``EditNotSaved``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

from pygls.workspace import TextDocument

from crank.tools import EditNotSaved, EditRefused
from crank.tools.agreement import body_of, disk_body, most_bytes
from crank.tools.textfile import BOM, write_atomic

from .sync import DocumentSync

SYNC_SECONDS = 10.0
"""How long the client may take to report (didChange, didSave) what it already did."""

SAVE_METHOD = "crank/saveDocument"


class Documents(Protocol):
    def document(self, path: Path) -> TextDocument | None: ...


def _write_keeping_bom(path: Path, text: str) -> None:
    """An editor's buffer never shows a BOM; the file keeps the one it had."""
    try:
        had_bom = path.read_bytes().startswith(BOM.encode())
    except FileNotFoundError:
        had_bom = False
    write_atomic(path, BOM + text if had_bom and not text.startswith(BOM) else text)


def _save_answer(answer: Any) -> tuple[bool, str]:
    if isinstance(answer, dict):
        reason = answer.get("reason")
        return answer.get("saved") is True, reason if isinstance(reason, str) else ""
    return False, f"the client answered {answer!r}, not {{saved}}"


class Landing:
    def __init__(
        self,
        documents: Documents,
        sync: DocumentSync,
        send_edit: Callable[[TextDocument, str, str], Awaitable[None]],
        request: Callable[[str, Any], Awaitable[Any]],
        can_save: Callable[[], bool],
    ) -> None:
        self._documents = documents
        self._sync = sync
        self._send_edit = send_edit
        self._request = request
        self._can_save = can_save

    def _text(self, path: Path) -> str | None:
        doc = self._documents.document(path)
        return doc.source if doc is not None else None

    async def apply(self, path: Path, old_text: str, new_text: str) -> str | None:
        doc = self._documents.document(path)
        if doc is None:
            raise EditRefused(f"{path.name} is no longer open in the editor")
        if doc.source != old_text:
            raise EditRefused(f"{path.name} changed in the editor since the edit was computed")
        uri = doc.uri
        on_disk = await asyncio.to_thread(disk_body, path, most_bytes(old_text))
        user_edits = self._check(path, uri, old_text, on_disk)
        self._sync.expect(uri, new_text)
        try:
            await self._send_edit(doc, old_text, new_text)
        except BaseException:
            self._sync.forget(uri, new_text)
            raise
        arrived = await self._sync.until(
            uri, lambda: self._text(path) in (new_text, None), SYNC_SECONDS
        )
        if self._text(path) is None:
            raise EditRefused(
                f"{path.name} was closed in the editor while the change was applied; "
                "nothing was saved. Read it again."
            )
        if not arrived:
            raise EditRefused(
                "it answered that the change was applied, but its text did not become the "
                f"changed text within {SYNC_SECONDS:g} s (the user may be typing in it); "
                "nothing was saved, so commands do not see it. Read it again."
            )
        if self._can_save():
            saves = self._sync.saves(uri)
            try:
                answer = await self._request(
                    SAVE_METHOD, {"uri": uri, "unsavedChanges": user_edits}
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # an error answer: the client could not save
                answer = {"saved": False, "reason": f"the client answered with an error: {exc}"}
            saved, reason = _save_answer(answer)
            if saved:
                await self._sync.until(uri, lambda: self._sync.saves(uri) > saves, SYNC_SECONDS)
                notes = []
                if user_edits:
                    notes.append(
                        f"The user had unsaved changes in {path.name}; the editor saved them "
                        "together with this change and told the user so."
                    )
                if self._text(path) != new_text:
                    notes.append(
                        "The editor changed the text as it saved it (format on save?); "
                        "read it again before the next edit."
                    )
                return " ".join(notes) or None
            if user_edits:
                raise EditNotSaved(
                    f"the editor did not save it ({reason or 'no reason given'}), and the "
                    "buffer also holds the user's unsaved changes, so Crank did not write it "
                    "either."
                )
            await self._write(path, uri, new_text)
            return (
                f"The editor did not save it ({reason or 'no reason given'}), so the same "
                "text was written to the file; the editor shows it as modified."
            )
        await self._write(path, uri, new_text)
        return None

    def _check(self, path: Path, uri: str, buffer: str, on_disk: str | None) -> bool:
        """Refuse what must not be done; return whether the buffer holds user edits."""
        state = self._sync.state(uri)
        differs = on_disk != body_of(buffer)
        if state is not None and state.disk is not None and differs and on_disk != state.disk:
            raise EditRefused(
                f"{path.name} changed on disk (by a command or another program) after the "
                "editor loaded it, and the editor's text is not what is on disk now; Crank "
                "overwrites neither. Ask the user to reload (or save) the file in the editor, "
                "then read it again."
            )
        user_edits = differs and self._sync.unsaved(uri)
        if user_edits and not self._can_save():
            raise EditRefused(
                f"{path.name} has unsaved changes in the editor, and this editor cannot save "
                "for Crank: changing only the buffer would leave commands (tests, grep) "
                "running on the old file, and writing the disk would go around the user's "
                "work. Nothing was changed. Ask the user to save or undo their changes to "
                "it, then try again."
            )
        return user_edits

    async def _write(self, path: Path, uri: str, text: str) -> None:
        try:
            await asyncio.to_thread(_write_keeping_bom, path, text)
        except OSError as exc:
            raise EditNotSaved(f"writing the file failed: {exc.strerror or exc}.") from None
        self._sync.wrote(uri, text)
