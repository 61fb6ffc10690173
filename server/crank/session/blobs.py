"""Image blobs: large images stored beside the session file, not in it.

A session file is read whole on every resume, so an image of a few megabytes in a line
would make every replay carry it. An image over ``INLINE_LIMIT`` bytes is written to
``<session>.blobs/<sha256>.<ext>`` (content-addressed: the same image is stored once)
and the entry keeps a reference (``sha256``, ``mimeType``, ``bytes``, ``name``). The
blob is written and synced (file, then folder) before the entry naming it is appended,
so an entry never names a blob that a crash lost. Its bytes are read only when a
request is built (``load``); a blob that is missing or does not match its hash reads
as None, and the request says so in a placeholder instead of failing. A client that
shows a replayed image asks for it by hash (``referenced`` finds the message's block,
``read_blob`` the bytes): only a hash a message of the session names is ever read, and
only from the session's own folder.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterable
from pathlib import Path

from crank.agent.images import EXTENSIONS, MAX_IMAGE_BYTES, sha256_of
from crank.agent.messages import ImageBlock, Message, images_of

from .deferred import message_of
from .durable import fsync_dir, write_all
from .entries import Entry

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


def as_kept(block: ImageBlock) -> tuple[ImageBlock, bytes | None]:
    """The block as its entry keeps it, writing nothing: unchanged when small or already
    a reference, else the reference to its blob (and the bytes that blob holds)."""
    if "data" not in block or block["bytes"] <= INLINE_LIMIT:
        return block, None
    raw = base64.b64decode(block["data"])
    reference: ImageBlock = {key: value for key, value in block.items() if key != "data"}  # type: ignore[assignment]
    reference["sha256"] = sha256_of(raw)
    reference["bytes"] = len(raw)
    return reference, raw


def kept_message(message: Message) -> Message:
    """The message as its entry keeps it (``stored_message``), writing nothing: what a
    replay of it gives."""
    if message["role"] == "assistant" or not message.get("images"):
        return message
    copy = dict(message)
    copy["images"] = [as_kept(block)[0] for block in message["images"]]
    return copy  # type: ignore[return-value]


def store(directory: Path, block: ImageBlock) -> ImageBlock:
    """The block as its entry keeps it: unchanged when small or already a reference,
    else a reference to a blob written (and synced) here first."""
    reference, raw = as_kept(block)
    if raw is None:
        return block
    target = blob_path(directory, reference)
    if target.is_file() and target.stat().st_size == len(raw):
        return reference
    directory.mkdir(mode=0o700, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        write_all(fd, raw)
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


def is_hash(value: object) -> bool:
    """True for 64 lowercase hex digits: the only thing that may name a blob."""
    return isinstance(value, str) and _HEX.fullmatch(value) is not None


def referenced(path: Path, entries: Iterable[Entry], sha256: str) -> ImageBlock | None:
    """The first image block a message among ``entries`` (of the file at ``path``)
    carries with this hash, or None when no message refers to it."""
    for entry in entries:
        if entry.get("type") != "message":
            continue
        for block in images_of(message_of(path, entry)):
            if block.get("sha256") == sha256:
                return block
    return None


BlobProblem = str
"""Why a blob cannot be had, as a phrase: ``the blob is missing`` (``BLOB_MISSING``)."""
BLOB_MISSING: BlobProblem = "the blob is missing"


def read_blob(directory: Path, block: ImageBlock) -> bytes | BlobProblem:
    """The stored image's bytes, or a phrase saying why they cannot be had (missing,
    unreadable, not the image its hash names). Follows no symbolic link, neither the
    folder nor the file; the name is built only from a checked hash and a known
    extension."""
    sha = block.get("sha256")
    if not is_hash(sha):
        return "the image has no valid hash"
    name = blob_path(directory, block).name
    try:
        folder = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return BLOB_MISSING
    except OSError as exc:
        return f"the blob folder cannot be read ({exc.strerror or exc})"
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=folder)
    except FileNotFoundError:
        return BLOB_MISSING
    except OSError as exc:
        return f"the blob cannot be read ({exc.strerror or exc})"
    finally:
        os.close(folder)
    try:
        size = os.fstat(fd).st_size
        if size > MAX_IMAGE_BYTES:
            return "the blob does not match its hash (it is larger than any image Crank stores)"
        chunks: list[bytes] = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    except OSError as exc:
        return f"the blob cannot be read ({exc.strerror or exc})"
    finally:
        os.close(fd)
    raw = b"".join(chunks)
    if sha256_of(raw) != sha:
        return "the blob does not match its hash (it was changed or damaged)"
    return raw


def load(directory: Path, block: ImageBlock) -> str | None:
    """A stored image's bytes as base64, or None when its blob is missing, unreadable
    or not the image its hash names."""
    raw = read_blob(directory, block)
    if isinstance(raw, str):
        return None
    return base64.b64encode(raw).decode("ascii")
