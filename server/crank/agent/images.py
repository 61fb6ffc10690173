"""Images: what an image is to every layer, checked once at the boundary.

An image travels as an ``ImageBlock`` (``agent.messages``) on a user message or a tool
result: its MIME type, its size in bytes, an optional name, and either its bytes inline
(``data``, base64) or a reference to a blob stored beside the session (``sha256``).
The helpers here are pure: they sniff the type from the first bytes (never from a file
name alone), read the dimensions a header gives for free, check what a client sent,
and word the placeholder that stands in for an image a model does not get.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from .lineage import LineageList, kept, shared_prefix
from .messages import ImageBlock, Message, images_of

ImageMime = Literal["image/png", "image/jpeg", "image/gif", "image/webp"]
"""The image types both APIs accept; anything else is refused by name."""
IMAGE_MIMES: tuple[ImageMime, ...] = get_args(ImageMime)
EXTENSIONS: dict[str, str] = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/gif": "gif",
    "image/webp": "webp",
}
MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""The largest image Crank sends (Anthropic's own per-image limit is 5 MB)."""


class ImageError(ValueError):
    """An image that cannot be used, with a message saying exactly why."""


def sniff_mime(data: bytes) -> ImageMime | None:
    """The image type the bytes begin with, or None when they are no image we send."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def dimensions(data: bytes) -> tuple[int, int] | None:
    """Width and height from the header, when it states them near the start; else None."""
    try:
        if data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR":
            width, height = struct.unpack(">II", data[16:24])
            return int(width), int(height)
        if data[:6] in (b"GIF87a", b"GIF89a"):
            width, height = struct.unpack("<HH", data[6:10])
            return int(width), int(height)
        if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
            return _webp_dimensions(data)
        if data.startswith(b"\xff\xd8"):
            return _jpeg_dimensions(data)
    except struct.error:
        return None
    return None


def _webp_dimensions(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8X":
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return width, height
    if chunk == b"VP8L":
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8 ":
        width, height = struct.unpack("<HH", data[26:30])
        return int(width) & 0x3FFF, int(height) & 0x3FFF
    return None


def _jpeg_dimensions(data: bytes) -> tuple[int, int] | None:
    """The first start-of-frame marker's size; segments are walked, never decoded."""
    index = 2
    while index + 9 < len(data):
        if data[index] != 0xFF:
            return None
        marker = data[index + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            index += 2
            continue
        length = int.from_bytes(data[index + 2 : index + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[index + 5 : index + 9])
            return int(width), int(height)
        index += 2 + length
    return None


def human_bytes(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.0f} KB" if size >= 10 * 1024 else f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def describe(block: ImageBlock) -> str:
    """``name.png, image/png, 64x48, 1.2 KB``: what an image is, in one line of text."""
    parts = [block["name"]] if block.get("name") else []
    parts.append(block["mimeType"])
    if "width" in block and "height" in block:
        parts.append(f"{block['width']}x{block['height']}")
    parts.append(human_bytes(block["bytes"]))
    return ", ".join(parts)


def placeholder(block: ImageBlock, reason: str) -> str:
    """The text that stands in for an image left out of a request, and why."""
    return f"[image omitted: {reason}: {describe(block)}]"


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def image_block(data: bytes, name: str | None = None) -> ImageBlock:
    """An inline block for raw bytes, type sniffed; ImageError if they are no image we
    send or are over the limit."""
    mime = sniff_mime(data)
    if mime is None:
        raise ImageError(
            f"{name or 'the data'} is not a PNG, JPEG, GIF or WebP image "
            f"(Crank sends only {', '.join(IMAGE_MIMES)})"
        )
    if len(data) > MAX_IMAGE_BYTES:
        raise ImageError(
            f"{name or 'the image'} is {human_bytes(len(data))}; the limit is "
            f"{human_bytes(MAX_IMAGE_BYTES)} (make it smaller and attach it again)"
        )
    block: ImageBlock = {"type": "image", "mimeType": mime, "bytes": len(data)}
    if name:
        block["name"] = name
    size = dimensions(data)
    if size is not None:
        block["width"], block["height"] = size
    block["data"] = base64.b64encode(data).decode("ascii")
    return block


@dataclass(frozen=True)
class ImageInput:
    """An image as a client sends it: a MIME type, base64 data and an optional name."""

    mime_type: str
    data: str
    name: str | None = None


def check_input(item: ImageInput, where: str) -> ImageBlock:
    """The block for a client's image, or ImageError naming ``where`` and the problem:
    a type we do not send, data that is not base64, bytes that are not that type, too
    large."""
    if item.mime_type not in IMAGE_MIMES:
        raise ImageError(
            f"{where}.mimeType: unsupported image type {item.mime_type!r} "
            f"(expected one of {', '.join(IMAGE_MIMES)})"
        )
    if len(item.data) > (MAX_IMAGE_BYTES * 4) // 3 + 4:
        raise ImageError(
            f"{where}.data: the image is over {human_bytes(MAX_IMAGE_BYTES)}, the limit"
        )
    try:
        raw = base64.b64decode(item.data, validate=True)
    except (binascii.Error, ValueError) as error:
        raise ImageError(f"{where}.data: not valid base64 ({error})") from None
    if not raw:
        raise ImageError(f"{where}.data: the image is empty")
    try:
        block = image_block(raw, item.name)
    except ImageError as error:
        raise ImageError(f"{where}: {error}") from None
    if block["mimeType"] != item.mime_type:
        raise ImageError(
            f"{where}: the data is {block['mimeType']}, not {item.mime_type} as declared"
        )
    return block


NOT_ACCEPTED = "the model does not accept images"
"""Why an image is left out for a model the catalog says takes none."""


def missing_reason(block: ImageBlock) -> str:
    return f"its stored copy {block.get('sha256', '?')[:12]} is missing"


def with_placeholders(text: str, lines: list[str]) -> str:
    """``text`` with one placeholder line per left-out image after it."""
    if not lines:
        return text
    return "\n\n".join([text, *lines]) if text else "\n\n".join(lines)


def sendable(message: Message, accepts: bool) -> tuple[str, list[ImageBlock]]:
    """The text and the inline images a vendor renders for a user message or a tool
    result. Images a model cannot take, and images whose bytes are not inline (the
    request builder could not load them), become placeholder lines after the text."""
    if message["role"] == "assistant":
        return "", []
    text = message["content"]
    images = message.get("images", [])
    if not images:
        return text, []
    kept: list[ImageBlock] = []
    lines: list[str] = []
    for block in images:
        if not accepts:
            lines.append(placeholder(block, NOT_ACCEPTED))
        elif "data" not in block:
            lines.append(placeholder(block, missing_reason(block)))
        else:
            kept.append(block)
    return with_placeholders(text, lines), kept


Load = Callable[[ImageBlock], "str | None"]
"""Gives a stored image's base64 bytes, or None when its blob is missing or damaged."""


@dataclass(frozen=True)
class Resolved:
    messages: list[Message]
    omitted: int
    """Images left out because the model takes none."""
    missing: int
    """Stored images whose blob could not be read (a placeholder says so)."""


def resolve_images(messages: Sequence[Message], load: Load, accepts: bool) -> Resolved:
    """The messages as a request sends them: stored images loaded inline (only for a
    model that takes images; blob bytes are read here and nowhere earlier), images a
    model cannot take, or whose blob is missing, turned into placeholder text. Messages
    without images are shared, the rest are copies: the record is never changed."""
    return _resolve_at(messages, [i for i, m in enumerate(messages) if images_of(m)], load, accepts)


def _resolve_at(
    messages: Sequence[Message], positions: Sequence[int], load: Load, accepts: bool
) -> Resolved:
    """``resolve_images`` when the messages with images are known to be at ``positions``."""
    if not positions and isinstance(messages, LineageList) and messages.is_frozen:
        return Resolved(messages, 0, 0)  # nothing to resolve, and nobody can change it
    out = list(messages)
    omitted = missing = 0
    for position in positions:
        message = messages[position]
        assert message["role"] != "assistant"
        kept: list[ImageBlock] = []
        lines: list[str] = []
        for block in images_of(message):
            if not accepts:
                omitted += 1
                lines.append(placeholder(block, NOT_ACCEPTED))
                continue
            if "data" in block:
                kept.append(block)
                continue
            data = load(block)
            if data is None:
                missing += 1
                lines.append(placeholder(block, missing_reason(block)))
                continue
            inline: ImageBlock = {**block, "data": data}
            inline.pop("sha256", None)
            kept.append(inline)
        copy: Any = {**message, "content": with_placeholders(message["content"], lines)}
        if kept:
            copy["images"] = kept
        else:
            copy.pop("images", None)
        out[position] = copy
    return Resolved(out, omitted, missing)


class ImageResolver:
    """``resolve_images`` for successive views that share most of their messages.

    Which messages carry images is remembered per position and looked for again only
    after the first message that differs from the previous view (``shared_prefix``), so
    a long run does not look through its whole transcript for images on
    every request. Blob bytes are still read for every request and never kept here: a
    session's pictures are not held in memory between requests."""

    def __init__(self) -> None:
        self._messages: Sequence[Message] = []
        self._positions: list[int] = []

    def resolve(self, messages: Sequence[Message], load: Load, accepts: bool) -> Resolved:
        return _resolve_at(messages, self.scan(messages), load, accepts)

    def scan(self, messages: Sequence[Message]) -> list[int]:
        """The positions of ``messages`` that hold images, looked for only from where
        they stop sharing the list scanned last (a request's, or a resumed record's
        view, scanned with its first estimate: ``RequestView.measure``)."""
        same = shared_prefix(messages, self._messages)
        positions = self._positions
        while positions and positions[-1] >= same:
            positions.pop()
        positions.extend(i for i in range(same, len(messages)) if images_of(messages[i]))
        self._messages = kept(messages)
        return positions
