"""What the tools need from their surroundings, as small interfaces.

The workspace layer (an editor session) implements these: the overlay of unsaved
buffers, ``workspace/applyEdit`` for open documents, the approval prompt, and the
question of whether a path outside the folder may be touched. Every field has a plain
in-process default so the tools work with no editor at all (``crank run``).

Two ways to see the editor's text: ``documents`` is what the editor has told us is
open, held in memory (LSP's open documents; a search in a worker thread reads it);
``files`` asks the editor for one file's text and may wait for an answer (ACP's
``fs/read_text_file``). The tools read a file through ``files``; by default it is
``documents`` seen through ``OpenDocuments``, so an LSP editor behaves as before.
A change goes back through ``apply_edit`` (the write: the editor takes the whole new
text and the disk holds it when it returns). ``terminal``, when set, runs commands
where the user watches them (ACP's ``terminal/*``).

Paths handed to ``documents``, ``apply_edit`` and ``outside`` are absolute and fully
resolved (symlinks followed), so an implementation can key documents by
``Path(uri_to_path(uri)).resolve()``.

Every question (``approve``, ``outside``) carries the ``ToolCall`` that asks, so the
editor can tie the answer to exactly that call: nobody guesses which call it was.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NotRequired, Protocol, TypedDict

import anyio

from crank.agent.tools import ToolCall, ToolError

from .detached import Detached
from .names import candidates, shown
from .sandbox import SandboxSettings, is_protected, protected_paths


class Documents(Protocol):
    """The editor's open documents: their current (possibly unsaved) text."""

    def text_of(self, path: Path) -> str | None:
        """The buffer's text if ``path`` is open in the editor, else None."""
        ...

    def paths(self) -> Iterable[Path]:
        """Every open document's path (so a search can see buffers that differ from disk)."""
        ...


class EditorFiles(Protocol):
    """The editor's text of a file, asked for when a tool needs it."""

    async def read(self, path: Path) -> str | None:
        """The editor's text of ``path`` (with its unsaved changes), or None when the
        editor has none to give: the tools then read the disk. May wait on the editor;
        cancelling the caller withdraws the question. Raises ToolError when the editor
        should have answered and did not (the model is told)."""
        ...

    def paths(self) -> Iterable[Path]:
        """The paths known to be open (their unsaved text is worth a note after a
        command); may be empty when the editor does not say."""
        ...


class OpenDocuments:
    """``EditorFiles`` over open documents held in memory (no waiting)."""

    def __init__(self, documents: Documents) -> None:
        self._documents = documents

    async def read(self, path: Path) -> str | None:
        return self._documents.text_of(path)

    def paths(self) -> Iterable[Path]:
        return self._documents.paths()


@dataclass(frozen=True)
class TerminalRun:
    """How a command run in the editor's terminal ended, and the output it kept."""

    output: str
    exit_code: int | None
    signal: str | None = None
    truncated: bool = False
    """The editor kept only the end of the output (``output_limit`` bytes)."""
    timed_out: bool = False


class EditorTerminal(Protocol):
    """A terminal in the editor, shown with the tool call that runs the command."""

    async def run(
        self,
        call_id: str,
        command: Detached,
        cwd: Path,
        seconds: float,
        output_limit: int,
    ) -> TerminalRun:
        """Run ``command.argv`` (exactly: program and arguments, no shell added) in
        ``cwd``; end it after ``seconds``. On every way out (its end, the timeout, a
        cancellation of the caller) a command that may still run is ended
        (``command.end()``, the sweep when that cannot), the terminal killed and
        released before this returns or re-raises. Raises ToolError when the editor
        refuses or does not answer."""
        ...


class EditRefused(Exception):
    """Raised by an ``apply_edit`` when the editor did not apply the edit and nothing
    changed; the message (the client's failureReason) is shown to the model."""


class EditNotSaved(Exception):
    """Raised by an ``apply_edit`` when the change reached the editor's buffer but not
    the disk (the save failed); the message says why, and the model is told that its
    commands do not see the change."""


ApplyEdit = Callable[[Path, str, str], Awaitable["str | None"]]
"""``(path, old_text, new_text)``: replace the whole text of an open document, and have
the same text on disk before returning (saved by the editor, or written beside it).
``old_text`` is the buffer text the change was computed from, so an implementation can
refuse if the buffer moved on. Returns a sentence for the model about how the change
landed (for example that the user's unsaved changes were saved with it), or None.
Raises EditRefused when nothing changed, EditNotSaved when only the buffer did."""


class DiffPreview(TypedDict):
    kind: Literal["diff"]
    path: str
    oldText: str
    newText: str
    unsavedChanges: NotRequired[bool]
    """The file is open with text the disk does not hold (the user's unsaved edits):
    the change is saved together with them, so the question says so."""
    oldTextOmitted: NotRequired[int]
    """Set (to the old file's size in bytes) when the old file was too large or not
    text, so it was not loaded: ``oldText`` is then empty and is NOT the old content
    (a client must not offer to restore it)."""
    created: NotRequired[bool]
    """True when the file does not exist yet: ``oldText`` is empty because there is
    no old file (ACP's diff then says ``oldText: null``)."""


class CommandPreview(TypedDict):
    kind: Literal["command"]
    command: str


class PathPreview(TypedDict):
    kind: Literal["path"]
    path: str


class ApprovalRequest(TypedDict):
    """One question to the user, on behalf of the call ``toolCallId``. ``toolName`` is
    the tool, or the pseudo tool ``outside`` for a path outside the workspace."""

    toolCallId: str
    toolName: str
    arguments: dict[str, Any]
    preview: DiffPreview | CommandPreview | PathPreview


def approval_request(
    call: ToolCall, preview: DiffPreview | CommandPreview | PathPreview, *, tool_name: str = ""
) -> ApprovalRequest:
    """The question about ``call`` (as ``tool_name`` when it is not the call's own tool)."""
    return {
        "toolCallId": call.id,
        "toolName": tool_name or call.name,
        "arguments": call.arguments,
        "preview": preview,
    }


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str | None = None

    @classmethod
    def allow(cls) -> Decision:
        return cls(True)

    @classmethod
    def reject(cls, reason: str | None = None) -> Decision:
        return cls(False, reason)


Approve = Callable[[ApprovalRequest], Awaitable[Decision]]
Outside = Callable[[Path, ToolCall], Awaitable["bool | Decision"]]
"""May the call use a path outside the workspace? A Decision carries the user's reason."""


class NoDocuments:
    """No editor: nothing is open."""

    def text_of(self, path: Path) -> str | None:
        return None

    def paths(self) -> Iterable[Path]:
        return ()


class MemoryDocuments:
    """Open documents held in memory: a stand-in editor for tests.

    ``apply_edit`` follows the editor contract: it refuses an edit computed from text
    that is no longer the buffer's, and saves the buffer (the whole of it, as an editor
    does) before it returns.
    """

    def __init__(self, texts: dict[Path, str] | None = None) -> None:
        self.texts: dict[Path, str] = {p.resolve(): t for p, t in (texts or {}).items()}

    def open(self, path: Path, text: str) -> None:
        self.texts[path.resolve()] = text

    def text_of(self, path: Path) -> str | None:
        return self.texts.get(path)

    def paths(self) -> Iterable[Path]:
        return list(self.texts)

    async def apply_edit(self, path: Path, old_text: str, new_text: str) -> str | None:
        current = self.texts.get(path)
        if current is None:
            raise EditRefused(f"{path} is not open")
        if current != old_text:
            raise EditRefused(f"{path} changed since the edit was computed")
        self.texts[path] = new_text
        await anyio.to_thread.run_sync(path.write_bytes, new_text.encode("utf-8"))
        return None


async def allow_all(request: ApprovalRequest) -> Decision:
    return Decision.allow()


async def refuse_outside(path: Path, call: ToolCall) -> bool:
    return False


async def no_editor(path: Path, old_text: str, new_text: str) -> str | None:
    raise EditRefused(f"no editor is connected to apply the edit to {path}")


def _default_output_dir() -> Path:
    return Path(tempfile.gettempdir()) / f"crank-tool-output-{os.getuid()}"


def absolute(root: Path, raw: str) -> Path:
    """``raw`` made absolute against ``root``, ``~`` expanded, symlinks followed.

    A name shown escaped (``bad\\xffname.txt``, see ``names``) reaches the file whose
    name has that byte, when that is the only reading that exists; ToolError when a
    file exists under each reading (nothing is guessed)."""
    readings = [
        (given if given.is_absolute() else root / given).resolve()
        for given in (Path(text).expanduser() for text in candidates(raw))
    ]
    if len(readings) == 1:
        return readings[0]
    literal, escaped = readings
    if os.path.lexists(escaped):
        if os.path.lexists(literal):
            raise ToolError(
                f"Path '{raw}' is ambiguous: a file has that very name, and another has "
                "the bytes its \\xNN escapes stand for. Rename one of them with bash."
            )
        return escaped
    if not os.path.lexists(literal) and os.path.lexists(escaped.parent):
        return escaped if not os.path.lexists(literal.parent) else literal
    return literal


@dataclass(frozen=True)
class ToolContext:
    """Everything a tool may touch. ``root`` is the workspace folder; relative paths in
    tool arguments resolve against it."""

    root: Path
    documents: Documents = field(default_factory=NoDocuments)
    editor_files: EditorFiles | None = None
    """How a tool reads the editor's text of one file; None: ``documents`` (see
    ``files``)."""
    terminal: EditorTerminal | None = None
    """Where commands run when not here: the editor's terminal (see bash)."""
    apply_edit: ApplyEdit = no_editor
    approve: Approve = allow_all
    outside: Outside = refuse_outside
    output_dir: Path = field(default_factory=_default_output_dir)
    sandbox: Callable[[], SandboxSettings] = SandboxSettings
    """The sandbox settings, asked for each command (a settings change applies to the
    next one). The default confines commands where the platform allows."""
    protected: tuple[Path, ...] = field(default_factory=protected_paths)
    """Secret locations (credential stores, Crank's config and data folders) that no
    tool reads or writes, whatever ``outside`` says; commands see them empty."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", self.root.resolve())
        if self.editor_files is None:
            object.__setattr__(self, "editor_files", OpenDocuments(self.documents))

    @property
    def files(self) -> EditorFiles:
        """The one way the tools read the editor's text of a file."""
        assert self.editor_files is not None  # set in __post_init__
        return self.editor_files

    async def resolve(self, raw: str, call: ToolCall) -> Path:
        """The absolute, symlink-free path for an argument of ``call``, after asking
        ``outside`` if it leaves the workspace; ToolError names the path when refused."""
        if not raw.strip():
            raise ToolError("path must not be empty")
        resolved = absolute(self.root, raw)
        if is_protected(resolved, self.protected):
            raise ToolError(
                f"Path '{raw}' resolves to {resolved}, which holds credentials or another "
                "process's data (/proc); no tool may read or change it."
            )
        if resolved == self.root or resolved.is_relative_to(self.root):
            return resolved
        answer = await self.outside(resolved, call)
        decision = answer if isinstance(answer, Decision) else Decision(answer)
        if decision.allowed:
            return resolved
        because = f" The user declined: {decision.reason}" if decision.reason else ""
        raise ToolError(
            f"Path '{raw}' resolves to {resolved}, which is outside the workspace "
            f"{self.root}; access was refused.{because}"
        )

    def display(self, path: Path) -> str:
        """How a path is shown to the model: relative to the root when inside it, bytes
        that are not UTF-8 escaped (``names.shown``)."""
        if path.is_relative_to(self.root):
            return shown(path.relative_to(self.root).as_posix() or ".")
        return shown(str(path))
