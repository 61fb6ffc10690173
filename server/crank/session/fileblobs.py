"""File images: the bytes a run's changes can be taken back to, beside the session.

The session's blob folder (``<id>.blobs``, the one images use) holds each content
once, however many files or runs share it: alone as ``<sha256>.file`` (``put``: the
one file an edit changes), or, for the first scan of a workspace that reads thousands
of files at once, in one pack (``FileStore.batch``): ``pack-<hex>.pack`` holds the
contents one after another and ``pack-<hex>.idx`` (JSON: ``{sha256: [offset, size]}``,
written when the batch ends) says where each is. One file per content would cost a
file creation each, which is most of a first scan's time.

Nothing is synced when it is written (a scan before a command keeps thousands of
contents, most of which are never needed); ``make_durable`` syncs the few an entry is
about to name, before the entry is appended, so an entry never names content a crash
lost. ``get`` reads one back by hash, checks it, and follows no symbolic link.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .blobs import BLOB_MISSING, BlobProblem, is_hash

__all__ = ["FileStore", "get", "is_hash", "make_durable", "put"]
from .durable import fsync_dir, write_all

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
        write_all(fd, data)
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
    packed = _from_pack(directory, sha256)
    if packed is not None:
        return packed
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


def _indexes(directory: Path) -> Iterator[tuple[Path, dict[str, list[int]]]]:
    try:
        names = sorted(name for name in os.listdir(directory) if name.endswith(".idx"))
    except OSError:
        return
    for name in names:
        try:
            index = json.loads((directory / name).read_bytes())
        except (OSError, ValueError):
            continue
        if isinstance(index, dict):
            yield directory / name, index


def _from_pack(directory: Path, sha256: str) -> bytes | None:
    """The content from a pack that holds it (and matches its hash), else None."""
    for index_path, index in _indexes(directory):
        where = index.get(sha256)
        if not (isinstance(where, list) and len(where) == 2):
            continue
        offset, size = where
        try:
            fd = os.open(index_path.with_suffix(".pack"), os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            data = os.pread(fd, size, offset)
        except OSError:
            continue
        finally:
            os.close(fd)
        if hashlib.sha256(data).hexdigest() == sha256:
            return data
    return None


class FileStore:
    """The content store of one session's blob folder, as a scan uses it: ``put`` one
    content, or ``batch`` many into one pack. Remembers which hashes it holds, so a
    content already kept is not written again."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._held: set[str] | None = None
        self._packs: list[Path] = []
        self._where: dict[str, tuple[Path, int, int]] = {}

    def get(self, sha256: str) -> bytes | BlobProblem:
        """``get``, the packs' indexes read once."""
        self._known()
        where = self._where.get(sha256)
        if where is not None:
            pack, offset, size = where
            try:
                fd = os.open(pack, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
                try:
                    data = os.pread(fd, size, offset)
                finally:
                    os.close(fd)
            except OSError as exc:
                return f"the stored content cannot be read ({exc.strerror or exc})"
            if hashlib.sha256(data).hexdigest() == sha256:
                return data
        return get(self.directory, sha256)

    def _remember(self, pack: Path, index: dict[str, list[int]]) -> None:
        for sha, where in index.items():
            if isinstance(where, list) and len(where) == 2:
                self._where[sha] = (pack, int(where[0]), int(where[1]))

    def _known(self) -> set[str]:
        if self._held is None:
            held: set[str] = set()
            for index_path, index in _indexes(self.directory):
                held.update(index)
                self._remember(index_path.with_suffix(".pack"), index)
            with contextlib.suppress(OSError):
                held.update(
                    name[: -len(SUFFIX)]
                    for name in os.listdir(self.directory)
                    if name.endswith(SUFFIX)
                )
            self._held = held
        return self._held

    def __len__(self) -> int:
        """How many contents the folder holds."""
        return len(self._known())

    def put(self, data: bytes) -> str:
        sha = hashlib.sha256(data).hexdigest()
        if sha in self._known():
            return sha
        put(self.directory, data)
        self._known().add(sha)
        return sha

    @contextmanager
    def batch(self) -> Iterator[Callable[[bytes], str]]:
        """A ``put`` that appends to one new pack; the pack's index is written when the
        batch ends (an interrupted batch leaves a pack no index names: never read)."""
        known = self._known()
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        name = f"pack-{secrets.token_hex(6)}"
        pack = self.directory / f"{name}.pack"
        index: dict[str, list[int]] = {}
        with open(pack, "xb") as handle:

            def save(data: bytes) -> str:
                sha = hashlib.sha256(data).hexdigest()
                if sha in known or sha in index:
                    return sha
                index[sha] = [handle.tell(), len(data)]
                handle.write(data)
                return sha

            yield save
        if not index:
            pack.unlink()
            return
        temporary = self.directory / f".{name}.idx.tmp"
        temporary.write_text(json.dumps(index, separators=(",", ":")))
        os.replace(temporary, self.directory / f"{name}.idx")
        known.update(index)
        self._remember(pack, index)
        self._packs.append(pack)

    def make_durable(self, hashes: Iterable[str]) -> None:
        """``make_durable`` for loose contents, plus every pack and index (a pack's
        contents cannot be told apart from here without reading its index again)."""
        wanted = set(hashes)
        if not wanted:
            return
        loose = [sha for sha in wanted if (self.directory / _name(sha)).exists()]
        make_durable(self.directory, loose)
        for pack in self._packs:
            for path in (pack, pack.with_suffix(".idx")):
                with contextlib.suppress(OSError):
                    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
                    try:
                        os.fsync(fd)
                    finally:
                        os.close(fd)
        self._packs.clear()
        fsync_dir(self.directory)
