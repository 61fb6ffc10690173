"""Image blobs: large images stored beside the session file, not in it.

A session file is read whole on every resume, so an image of a few megabytes in a line
would make every replay carry it. An image over ``INLINE_LIMIT`` bytes is written to
``<session>.blobs/<sha256>.<ext>`` (content-addressed: the same image is stored once)
and the entry keeps a reference (``sha256``, ``mimeType``, ``bytes``, ``name``). The
blob is written and synced (file, then folder) before the entry naming it is appended,
so an entry never names a blob that a crash lost. Its bytes are read only when a
request is built (``load``); a blob that is missing or does not match its hash reads
as None, and the request says so in a placeholder instead of failing.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from crank.agent.images import EXTENSIONS, Load, resolve_images, sha256_of
from crank.agent.loop import BuildRequest, RunPrompt
from crank.agent.messages import ImageBlock, Message
from crank.agent.model import Model, ModelRequest, accepts_images

from .durable import fsync_dir

_HEX = re.compile(r"[0-9a-f]{64}")
INLINE_LIMIT = 8 * 1024
"""Images up to this many bytes stay inline in their entry (a small icon costs less
than a file of its own)."""


def blob_dir(session_path: Path) -> Path:
    """``<id>.blobs`` beside ``<id>.jsonl``."""
    return session_path.with_suffix(".blobs")


def blob_path(directory: Path, block: ImageBlock) -> Path:
    extension = EXTENSIONS.get(block["mimeType"], "bin")
    return directory / f"{block['sha256']}.{extension}"


def store(directory: Path, block: ImageBlock) -> ImageBlock:
    """The block as its entry keeps it: unchanged when small or already a reference,
    else a reference to a blob written (and synced) here first."""
    if "data" not in block or block["bytes"] <= INLINE_LIMIT:
        return block
    raw = base64.b64decode(block["data"])
    reference: ImageBlock = {key: value for key, value in block.items() if key != "data"}  # type: ignore[assignment]
    reference["sha256"] = sha256_of(raw)
    reference["bytes"] = len(raw)
    target = blob_path(directory, reference)
    if target.is_file() and target.stat().st_size == len(raw):
        return reference
    directory.mkdir(mode=0o700, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        view = memoryview(raw)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, target)
    fsync_dir(directory)
    return reference


def stored_message(directory: Path, message: Message) -> Message:
    """The message as its entry is written: large images moved out to blobs."""
    if message["role"] == "assistant" or not message.get("images"):
        return message
    images = [store(directory, block) for block in message["images"]]
    copy = dict(message)
    copy["images"] = images
    return copy  # type: ignore[return-value]


def load(directory: Path, block: ImageBlock) -> str | None:
    """A stored image's bytes as base64, or None when its blob is missing, unreadable
    or not the image its hash names."""
    sha = block.get("sha256")
    if not isinstance(sha, str) or _HEX.fullmatch(sha) is None:
        return None  # never a path: only a hash names a blob
    try:
        raw = blob_path(directory, block).read_bytes()
    except OSError:
        return None
    if sha256_of(raw) != sha:
        return None
    return base64.b64encode(raw).decode("ascii")


def loading_requests(load: Load, model: Model, inner: BuildRequest) -> BuildRequest:
    """A ``build_request`` for a harness run without a Housekeeper (``crank run``):
    ``inner``'s request (the plain view and what it adds), with stored images loaded
    (or placeholders) as every request needs."""

    async def build(record: Sequence[Message], prompt: RunPrompt) -> ModelRequest:
        request = await inner(record, prompt)
        resolved = resolve_images(request.messages, load, accepts_images(model))
        return replace(request, messages=resolved.messages)

    return build
