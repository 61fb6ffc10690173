"""Text files as the tools see them: overlay first, then disk; one shape in memory.

In memory a document is LF-only text without a BOM (``Text.body``); ``Text.encode``
puts the original line ending and BOM back, so a CRLF file stays CRLF and a BOM is
never lost or invented. Disk writes are atomic: a temp file in the same directory,
fsync, ``os.replace``, keeping the old file's permission bits.

Nothing here reads more than ``MAX_TEXT_BYTES`` of a file, and only regular files are
opened (``open_regular``): a FIFO, socket or device is refused before a byte is read.
Larger files are for the streaming readers (``lines``) or are refused, naming the size.

A path the tools checked (``ToolContext.resolve``: symlink-free, inside the workspace or
allowed) is opened ``exact``: the file opened must be the file at that path, not one a
link put there since (a command the agent runs at the same time can swap a folder for
a link to ``~/.ssh``). The last step is opened without following a link, and the
descriptor's own name (Linux: ``/proc/self/fd``) must be the checked path; a write
creates and renames inside the checked folder by its descriptor.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import anyio

from crank.agent.tools import ToolError

from .context import EditorFiles

BOM = "\ufeff"
SNIFF_BYTES = 8192
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".ico", ".tiff"})
MAX_TEXT_BYTES = 4 * 1024 * 1024
"""The largest file loaded whole into memory (edit, the old text behind write's diff,
the check that a file did not change while the user decided). The one owner of that
limit: bigger files are streamed (read, grep) or refused (edit), never loaded."""


def human_size(size: int) -> str:
    """``2147483648`` -> ``"2.0 GB"`` (binary units, one decimal)."""
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{size} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def sized(size: int) -> str:
    """A size for a message: ``"2.0 GB (2147483648 bytes)"``."""
    text = human_size(size)
    return text if text.endswith("bytes") else f"{text} ({size} bytes)"


Stamp = tuple[int, int, int]
"""(size, mtime in ns, inode) of a file: enough to tell it changed without reading it."""


def stamp_of(info: os.stat_result) -> Stamp:
    return (info.st_size, info.st_mtime_ns, info.st_ino)


@dataclass(frozen=True)
class Text:
    body: str
    """LF line endings, no BOM."""
    newline: str = "\n"
    bom: bool = False
    open_in_editor: bool = False
    raw: str = ""
    """The text exactly as found (buffer or decoded file), for apply_edit's old_text."""
    omitted: int = 0
    """Bytes of a file that was not loaded (too large, or not text): ``body`` and
    ``raw`` are then empty, ``newline`` and ``bom`` were sniffed from its start, and
    ``stamp`` says whether it changed. Only write (which replaces it whole) accepts it."""
    stamp: Stamp | None = None

    def encode(self, body: str) -> str:
        """``body`` (LF, no BOM) in this document's own line ending and BOM."""
        out = body.replace("\n", self.newline) if self.newline != "\n" else body
        return (BOM + out) if self.bom else out


def split_text(raw: str, *, open_in_editor: bool = False, stamp: Stamp | None = None) -> Text:
    bom = raw.startswith(BOM)
    content = raw[1:] if bom else raw
    body = content.replace("\r\n", "\n")
    return Text(body, newline_of(content), bom, open_in_editor, raw, stamp=stamp)


def newline_of(sample: str) -> str:
    """CRLF when most of the sample's line endings are CRLF, else LF."""
    crlf = sample.count("\r\n")
    return "\r\n" if crlf and crlf * 2 >= sample.count("\n") else "\n"


def looks_binary(data: bytes) -> bool:
    return b"\x00" in data[:SNIFF_BYTES]


def refuse_images(path: Path, display: str) -> None:
    """Refuse a file named as an image whose bytes are no image ``read`` returns (a
    BMP, an icon, a ``.png`` that is not one): it is no text either."""
    if path.suffix.lower() in IMAGE_SUFFIXES:
        raise ToolError(
            f"{display} is named as an image ({path.suffix}) but is not a PNG, JPEG, GIF or "
            "WebP image, the kinds read returns; its bytes are not shown as text."
        )


def binary_error(display: str, size: int, at: int | None = None) -> ToolError:
    """The refusal of a binary file: says so, names the size, shows no bytes."""
    where = f"at byte {at}" if at is not None else f"in its first {SNIFF_BYTES // 1024} KB"
    return ToolError(
        f"{display} looks like a binary file (a NUL byte {where}; {sized(size)}); its bytes "
        "are not shown. Only UTF-8 text is supported: use bash with a tool made for the "
        "format (file, xxd | head, strings | head) to inspect it."
    )


def utf8_error(display: str, at: int) -> ToolError:
    return ToolError(f"{display} is not valid UTF-8 (byte {at}); only UTF-8 text is supported.")


def decode_file(path: Path, data: bytes, display: str) -> str:
    """UTF-8 text of a file, or ToolError saying why it is not text."""
    refuse_images(path, display)
    if looks_binary(data):
        raise binary_error(display, len(data))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise utf8_error(display, exc.start) from None


def swapped(display: str) -> ToolError:
    return ToolError(
        f"{display} changed while it was being opened (a link in its path now leads "
        "elsewhere); nothing was read or written. Look at the path again."
    )


def opened_as(fd: int, path: Path) -> bool:
    """Whether the descriptor is the file or folder at ``path`` (a symlink-free path).
    Linux names what a descriptor points at; where nothing does, this cannot be told
    and counts as yes (the last step was still opened without following a link)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}") == str(path)
    except OSError:
        return True


@contextlib.contextmanager
def open_regular(
    path: Path, display: str, *, exact: bool = False
) -> Iterator[tuple[BinaryIO, os.stat_result]]:
    """The open file and its stat. Only a regular file is opened: a FIFO or a device
    could block the worker thread for ever, where no abort reaches it (O_NONBLOCK makes
    the open itself return at once, so the check can be made on what was opened).
    ``exact``: ``path`` is a checked, symlink-free path and must be what is opened."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if exact:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise ToolError(f"File not found: {display}") from None
    except IsADirectoryError:
        raise ToolError(f"{display} is a directory, not a file; use ls to list it.") from None
    except PermissionError:
        raise ToolError(f"Permission denied reading {display}") from None
    except OSError as exc:
        if exact and exc.errno == errno.ELOOP:  # the last step became a link
            raise swapped(display) from None
        if exc.errno == errno.ENXIO:  # a Unix socket (or a device with nothing behind it)
            raise ToolError(
                f"{display} is not a regular file (a pipe, socket or device)."
            ) from None
        raise ToolError(f"Could not open {display}: {exc.strerror or exc}") from None
    try:
        if exact and not opened_as(fd, path):
            raise swapped(display)
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise ToolError(f"{display} is a directory, not a file; use ls to list it.")
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(f"{display} is not a regular file (a pipe, socket or device).")
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as handle:
        yield handle, info


def _read_whole(path: Path, display: str, instead: str) -> tuple[bytes, Stamp]:
    """The bytes of a file of at most MAX_TEXT_BYTES; ToolError naming the size and
    ``instead`` (what to do) for a bigger one. Never reads more than the limit, even if
    the file grows after the size was looked at."""
    with open_regular(path, display, exact=True) as (handle, info):
        data = handle.read(MAX_TEXT_BYTES + 1)
        if info.st_size > MAX_TEXT_BYTES or len(data) > MAX_TEXT_BYTES:
            size = max(info.st_size, len(data))
            raise ToolError(
                f"{display} is {sized(size)}, over the {human_size(MAX_TEXT_BYTES)} limit for "
                f"files loaded whole. {instead}"
            )
        return data, stamp_of(info)


async def load_text(path: Path, files: EditorFiles, display: str, *, instead: str) -> Text:
    """The document's current text: the editor buffer if open, else the file on disk.
    Either way at most MAX_TEXT_BYTES (``instead`` says what to do about a bigger one)."""
    buffer = await files.read(path)
    if buffer is not None:
        if len(buffer) * 4 > MAX_TEXT_BYTES:
            size = len(buffer.encode("utf-8", "surrogatepass"))
            if size > MAX_TEXT_BYTES:
                raise ToolError(
                    f"{display} (open in the editor) is {sized(size)}, over the "
                    f"{human_size(MAX_TEXT_BYTES)} limit for files loaded whole. {instead}"
                )
        return split_text(buffer, open_in_editor=True)
    data, stamp = await anyio.to_thread.run_sync(_read_whole, path, display, instead)
    return split_text(decode_file(path, data, display), stamp=stamp)


def _previous(path: Path, display: str) -> Text | None:
    try:
        with open_regular(path, display, exact=True) as (handle, info):
            head = handle.read(SNIFF_BYTES)
            if info.st_size <= MAX_TEXT_BYTES and not looks_binary(head):
                data = head + handle.read(MAX_TEXT_BYTES + 1 - len(head))
                if len(data) <= MAX_TEXT_BYTES:
                    with contextlib.suppress(UnicodeDecodeError):
                        return split_text(data.decode("utf-8"), stamp=stamp_of(info))
            sample = "" if looks_binary(head) else head.decode("utf-8", "ignore")
            return Text(
                "",
                newline_of(sample),
                sample.startswith(BOM),
                omitted=info.st_size,
                stamp=stamp_of(info),
            )
    except ToolError:
        if not os.path.lexists(path):
            return None
        raise


async def load_previous(path: Path, files: EditorFiles, display: str) -> Text | None:
    """What write replaces: the buffer if open; else the file's text when it is UTF-8
    text within MAX_TEXT_BYTES; else (huge, binary, not UTF-8) a Text with ``omitted``
    set, read no further than its first bytes; None if there is no file."""
    buffer = await files.read(path)
    if buffer is not None:
        return split_text(buffer, open_in_editor=True)
    return await anyio.to_thread.run_sync(_previous, path, display)


def current_raw(path: Path) -> str | Stamp | None:
    """For the check that nothing changed while the user decided: the file's text if it
    is text within MAX_TEXT_BYTES, else its stamp; None if it is gone. Bounded like
    every other read here, and never blocks on a FIFO put in its place."""
    try:
        with open_regular(path, str(path), exact=True) as (handle, info):
            data = handle.read(MAX_TEXT_BYTES + 1)
            if len(data) <= MAX_TEXT_BYTES and not looks_binary(data):
                with contextlib.suppress(UnicodeDecodeError):
                    return split_text(data.decode("utf-8")).raw
            return stamp_of(info)
    except ToolError:
        if not os.path.lexists(path):
            return None
        raise


def _create_temp(folder: int, name: str) -> tuple[int, str]:
    """A new temp file beside ``name`` in the open ``folder``, created 0o666 so the
    kernel applies the umask (a new file gets the mode any other program would give
    it). The umask is never read by setting it: it is one per process, and another
    thread creating a file in that moment would get mode 0o666."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    while True:
        temp = f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(temp, flags, 0o666, dir_fd=folder), temp
        except FileExistsError:
            continue


def write_atomic(path: Path, text: str | bytes, *, exact: bool = False) -> None:
    """Replace ``path`` with ``text`` (UTF-8; bytes as they are) so readers see the old or the new file,
    never a half-written one. Creates missing parent directories. The temp file is
    made, and renamed over ``path``, inside the folder opened once; ``exact``: that
    folder must be the checked path's own (ToolError otherwise, nothing written)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        if exact and not opened_as(folder, path.parent):
            raise swapped(str(path))
        try:
            mode: int | None = (
                os.stat(path.name, dir_fd=folder, follow_symlinks=False).st_mode & 0o7777
            )
        except FileNotFoundError:
            mode = None
        fd, temp = _create_temp(folder, path.name)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(text if isinstance(text, bytes) else text.encode("utf-8"))
                handle.flush()
                os.fsync(handle.fileno())
            if mode is not None:
                os.chmod(temp, mode, dir_fd=folder)
            os.replace(temp, path.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp, dir_fd=folder)
            raise
    finally:
        os.close(folder)
