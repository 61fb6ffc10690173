"""Text files as the tools see them: overlay first, then disk; one shape in memory.

In memory a document is LF-only text without a BOM (``Text.body``); ``Text.encode``
puts the original line ending and BOM back, so a CRLF file stays CRLF and a BOM is
never lost or invented. Disk writes are atomic: a temp file in the same directory,
fsync, ``os.replace``, keeping the old file's permission bits.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

import anyio

from crank.agent.tools import ToolError

from .context import Documents

BOM = "\ufeff"
SNIFF_BYTES = 8192
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".ico", ".tiff"})


@dataclass(frozen=True)
class Text:
    body: str
    """LF line endings, no BOM."""
    newline: str = "\n"
    bom: bool = False
    open_in_editor: bool = False
    raw: str = ""
    """The text exactly as found (buffer or decoded file), for apply_edit's old_text."""

    def encode(self, body: str) -> str:
        """``body`` (LF, no BOM) in this document's own line ending and BOM."""
        out = body.replace("\n", self.newline) if self.newline != "\n" else body
        return (BOM + out) if self.bom else out


def split_text(raw: str, *, open_in_editor: bool = False) -> Text:
    bom = raw.startswith(BOM)
    content = raw[1:] if bom else raw
    crlf = content.count("\r\n")
    newline = "\r\n" if crlf and crlf * 2 >= content.count("\n") else "\n"
    body = content.replace("\r\n", "\n")
    return Text(body, newline, bom, open_in_editor, raw)


def looks_binary(data: bytes) -> bool:
    return b"\x00" in data[:SNIFF_BYTES]


def decode_file(path: Path, data: bytes, display: str) -> str:
    """UTF-8 text of a file, or ToolError saying why it is not text."""
    if path.suffix.lower() in IMAGE_SUFFIXES:
        raise ToolError(f"{display} is an image ({path.suffix}); reading images is not supported.")
    if looks_binary(data):
        raise ToolError(f"{display} looks like a binary file ({len(data)} bytes); not reading it.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"{display} is not valid UTF-8 (byte {exc.start}); only UTF-8 text is supported."
        ) from None


def _read_bytes(path: Path, display: str) -> bytes:
    """The file's bytes. Only a regular file is read: a FIFO or a device could block
    the worker thread for ever, where no abort reaches it (O_NONBLOCK makes the open
    itself return at once, so the check can be made on what was opened)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            mode = os.fstat(handle.fileno()).st_mode
            if stat.S_ISDIR(mode):
                raise IsADirectoryError(path)
            if not stat.S_ISREG(mode):
                raise ToolError(f"{display} is not a regular file (a pipe, socket or device).")
            return handle.read()
    except FileNotFoundError:
        raise ToolError(f"File not found: {display}") from None
    except IsADirectoryError:
        raise ToolError(f"{display} is a directory, not a file; use ls to list it.") from None
    except PermissionError:
        raise ToolError(f"Permission denied reading {display}") from None


async def load_text(path: Path, documents: Documents, display: str) -> Text:
    """The document's current text: the editor buffer if open, else the file on disk."""
    buffer = documents.text_of(path)
    if buffer is not None:
        return split_text(buffer, open_in_editor=True)
    data = await anyio.to_thread.run_sync(_read_bytes, path, display)
    return split_text(decode_file(path, data, display))


def _create_temp(path: Path) -> tuple[int, str]:
    """A new temp file next to ``path``, created 0o666 so the kernel applies the umask
    (a new file gets the mode any other program would give it). The umask is never read
    by setting it: it is one per process, and another thread creating a file in that
    moment would get mode 0o666."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    while True:
        temp = str(path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(temp, flags, 0o666), temp
        except FileExistsError:
            continue


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8) so readers see the old or the new file,
    never a half-written one. Creates missing parent directories."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    fd, temp = _create_temp(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
