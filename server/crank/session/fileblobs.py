"""File images: the bytes a run's changes can be taken back to, beside the session.

The session's blob folder (``<id>.blobs``, the one images use) holds one file per
content, ``<sha256>.file``: the same content is stored once, however many files or
runs share it. ``put`` writes a content without syncing it (a scan before a command
may put thousands, most of which are never needed); ``make_durable`` syncs the few an
entry is about to name, before the entry is appended, so an entry never names content
a crash lost. ``get`` reads one back by hash, checks it, and follows no symbolic link.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
from collections.abc import Iterable
from pathlib import Path

from .blobs import BLOB_MISSING, BlobProblem, is_hash
from .durable import fsync_dir

SUFFIX = ".file"


def _name(sha256: str) -> str:
    return f"{sha256}{SUFFIX}"


def put(directory: Path, data: bytes) -> str:
    """Keep ``data`` under its hash (once); its sha256."""
    sha = hashlib.sha256(data).hexdigest()
    target = directory / _name(sha)
    if target.is_file() and target.stat().st_size == len(data):
        return sha
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = directory / f".{sha}.{secrets.token_hex(4)}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    os.close(fd)
    os.replace(temporary, target)
    return sha


def make_durable(directory: Path, hashes: Iterable[str]) -> None:
    """Sync the named contents (and the folder) so an entry may name them."""
    synced = False
    for sha in set(hashes):
        with contextlib.suppress(OSError):
            fd = os.open(directory / _name(sha), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            synced = True
    if synced:
        fsync_dir(directory)


def get(directory: Path, sha256: str) -> bytes | BlobProblem:
    """The content stored under ``sha256``, or a phrase saying why it cannot be had."""
    if not is_hash(sha256):
        return "the content has no valid hash"
    try:
        fd = os.open(directory / _name(sha256), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return BLOB_MISSING
    except OSError as exc:
        return f"the stored content cannot be read ({exc.strerror or exc})"
    try:
        chunks: list[bytes] = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    except OSError as exc:
        return f"the stored content cannot be read ({exc.strerror or exc})"
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if hashlib.sha256(data).hexdigest() != sha256:
        return "the stored content does not match its hash (it was changed or damaged)"
    return data
