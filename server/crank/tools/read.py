"""read: a file's text, a window at a time.

Lines come back as they are, without line numbers: what the model sees is exactly
what ``edit`` will match, and a copied line never carries a number prefix into an
``oldText``. An image file (told by its first bytes) comes back as an image block after
a line describing it; a model that takes no images gets that line and a placeholder. Positions are given in the closing note instead ("lines 1-2000 of 5120,
offset=2001 to continue"). Open documents are read from the editor's buffer.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO

import anyio

from crank.agent.images import (
    MAX_IMAGE_BYTES,
    describe,
    dimensions,
    human_bytes,
    image_block,
    sniff_mime,
)
from crank.agent.tools import (
    MAX_BYTES,
    MAX_LINES,
    NOTE_ROOM_LINES,
    Tool,
    ToolCall,
    ToolError,
    ToolInfo,
    ToolOutput,
)

from .agreement import agrees, read_note
from .context import ToolContext
from .details import ReadDetails
from .lines import LineReader, text_of_line
from .textfile import (
    BOM,
    SNIFF_BYTES,
    binary_error,
    human_size,
    looks_binary,
    open_regular,
    refuse_images,
    sized,
    utf8_error,
)

INFO = ToolInfo(
    "read", kind="read", label="Read", shows="path", result="line_count", details=ReadDetails
)
"""What read says about itself to frontends and clients (``ToolInfo``)."""

NOTE_ROOM_BYTES = 512
IMAGE_SNIFF_BYTES = 32
"""Enough of a file's start to tell every image kind read returns, and a PNG's size."""
COUNT_BYTES = 64 * 1024 * 1024
"""After a window, the rest of a file is scanned to count its lines only up to this
many bytes; past it the note gives the file's size instead of a line count."""

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "File to read, relative to the workspace."},
        "offset": {"type": "integer", "minimum": 1, "description": "First line to show (1-based)."},
        "limit": {"type": "integer", "minimum": 1, "description": "How many lines to show."},
    },
    "required": ["path"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class Window:
    lines: list[str]
    total: int | None
    """Lines in the file; None when it was too large to count."""
    cut_line: bool
    """The window is one line, longer than the byte budget, cut short."""


def window_of(
    reader: LineReader, offset: int, limit: int | None, display: str, size: int
) -> Window:
    """Lines ``offset``.. within the budget, streamed: the lines before the window are
    skipped without being decoded, each line is held only up to the budget, and lines
    after it are counted (not read) up to COUNT_BYTES."""
    if looks_binary(reader.head(SNIFF_BYTES)):
        raise binary_error(display, size)
    skipped = reader.skip_lines(offset - 1)
    if skipped < offset - 1:
        return Window([], skipped, False)
    most_lines = MAX_LINES - NOTE_ROOM_LINES
    if limit is not None:
        most_lines = min(most_lines, limit)
    budget = MAX_BYTES - NOTE_ROOM_BYTES
    lines: list[str] = []
    used = 0
    while len(lines) < most_lines:
        room = budget - used - (1 if lines else 0)
        if room <= 0:
            break
        line = reader.read_line(room, skip_rest=False)
        if line is None:
            return Window(lines, offset - 1 + len(lines), False)
        if line.cut and lines:  # does not fit after what is shown: the window ends here
            break
        nul = line.data.find(b"\0")
        if nul != -1:
            raise binary_error(display, size, line.start + nul)
        try:
            text = text_of_line(line.data, line.cut)
        except UnicodeDecodeError as exc:
            raise utf8_error(display, line.start + exc.start) from None
        if offset == 1 and not lines:
            text = text.removeprefix(BOM)
        if line.cut:
            return Window([text], None, True)
        lines.append(text)
        used += len(line.data) + (1 if len(lines) > 1 else 0)
    rest = reader.count_lines(COUNT_BYTES)
    if rest is None:
        return Window(lines, None, False)
    return Window(lines, offset - 1 + len(lines) + rest, False)


def render(found: Window, offset: int, display: str, size: int) -> str:
    """The window's lines and the closing note (where to go on from)."""
    if found.total is not None and found.total < offset:
        if found.total == 0:
            return f"({display} is empty)"
        raise ToolError(
            f"offset {offset} is past the end of {display}, which has {found.total} lines."
        )
    text = "\n".join(found.lines)
    if found.cut_line:
        return (
            f"{text}\n\n[Line {offset} of {display} is longer than {MAX_BYTES // 1024} KB and "
            f"was cut. Use offset={offset + 1} to read on from the next line.]"
        )
    shown_end = offset - 1 + len(found.lines)
    if found.total is None:
        return (
            f"{text}\n\n[Showing lines {offset}-{shown_end}; {display} is {sized(size)}, too "
            f"large to count its lines (past {human_size(COUNT_BYTES)}). "
            f"Use offset={shown_end + 1} to continue.]"
        )
    if shown_end < found.total:
        return (
            f"{text}\n\n[Showing lines {offset}-{shown_end} of {found.total}. "
            f"Use offset={shown_end + 1} to continue.]"
        )
    return text


def image_output(data: bytes, path: Path, display: str) -> ToolOutput:
    """An image file as the model gets it: one line saying what it is, and the image."""
    block = image_block(data, path.name)
    text = f"Image file {display} ({describe(block)}), attached below."
    return ToolOutput(text, images=(block,))


def read_image(handle: BinaryIO, size: int, path: Path, display: str) -> ToolOutput | None:
    """The image a file holds, recognised by its first bytes (never by its name), or
    None when it holds none. Over MAX_IMAGE_BYTES it is refused, not shrunk."""
    head = handle.read(IMAGE_SNIFF_BYTES)
    if sniff_mime(head) is None:
        handle.seek(0)
        return None
    if size > MAX_IMAGE_BYTES:
        mime = sniff_mime(head)
        found = dimensions(head + handle.read(64 * 1024))
        shape = f", {found[0]}x{found[1]}" if found else ""
        raise ToolError(
            f"{display} is an image ({mime}{shape}, {human_bytes(size)}), larger than the "
            f"{human_bytes(MAX_IMAGE_BYTES)} read returns; make a smaller copy "
            "(e.g. with ImageMagick's convert -resize) and read that."
        )
    return image_output(head + handle.read(MAX_IMAGE_BYTES + 1 - len(head)), path, display)


def read_window(
    path: Path, offset: int, limit: int | None, display: str, stop: Callable[[], bool]
) -> str | ToolOutput:
    """The window of a file on disk, in bounded memory whatever its size; ``stop``
    ends the reading early once the caller has gone (the result is then unused).
    A PNG, JPEG, GIF or WebP file comes back as an image instead."""
    with open_regular(path, display, exact=True) as (handle, info):
        image = read_image(handle, info.st_size, path, display)
        if image is not None:
            return image
        refuse_images(path, display)
        found = window_of(LineReader(handle, stop=stop), offset, limit, display, info.st_size)
        return render(found, offset, display, info.st_size)


def buffer_window(buffer: str, offset: int, limit: int | None, display: str) -> str:
    """The window of an open editor buffer (already in memory), read the same way."""
    data = buffer.encode("utf-8", "surrogatepass")
    found = window_of(LineReader(io.BytesIO(data)), offset, limit, display, len(data))
    return render(found, offset, display, len(data))


def make_read(ctx: ToolContext) -> Tool:
    async def execute(call: ToolCall, signal: object, on_update: object) -> ToolOutput:
        args = call.arguments
        path = await ctx.resolve(args["path"], call)
        display = ctx.display(path)
        offset, limit = args.get("offset", 1), args.get("limit")
        buffer = await ctx.files.read(path)
        if buffer is not None:
            content = buffer_window(buffer, offset, limit, display)
        else:
            gone = [False]
            try:
                found = await anyio.to_thread.run_sync(
                    read_window,
                    path,
                    offset,
                    limit,
                    display,
                    lambda: gone[0],
                    abandon_on_cancel=True,
                )
            finally:
                gone[0] = True
            if isinstance(found, ToolOutput):
                details = {"path": str(path), "openInEditor": False, "unsaved": False}
                return replace(found, details=details)
            content = found
        unsaved = buffer is not None and not await anyio.to_thread.run_sync(agrees, buffer, path)
        if unsaved:
            content += "\n\n" + read_note(display)
        details = {"path": str(path), "openInEditor": buffer is not None, "unsaved": unsaved}
        return ToolOutput(content, details=details)

    return Tool(
        info=INFO,
        name="read",
        description=(
            "Read a UTF-8 text file. Returns its lines exactly as written (no line numbers), "
            f"at most {MAX_LINES} lines or {MAX_BYTES // 1024} KB at a time; the last line then "
            "says which offset to continue from. Use offset (1-based) and limit for large files. "
            "Files open in the editor are read with their unsaved changes. A PNG, JPEG, GIF "
            f"or WebP file (up to {MAX_IMAGE_BYTES // (1024 * 1024)} MB) is returned as an "
            "image."
        ),
        parameters=PARAMETERS,
        execute=execute,
        snippet="Read the contents of a file",
        guidelines=(
            "Read a file before changing it; read large files in windows with offset and limit.",
            "Show file paths clearly when working with files.",
        ),
        keep="head",
    )


def load_image_file(path: Path, display: str) -> ToolOutput:
    """An image file the user attached (a prompt's ``images`` uri, ``crank run
    --image``), read as ``read`` reads one; ToolError when it is no image we send."""
    with open_regular(path, display) as (handle, info):
        image = read_image(handle, info.st_size, path, display)
    if image is None:
        raise ToolError(f"{display} is not a PNG, JPEG, GIF or WebP image")
    return image
