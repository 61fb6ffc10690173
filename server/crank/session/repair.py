"""Repair of the one damage a crash can cause: a torn last line.

``repair`` moves the bytes after the last newline, untouched, into a sidecar file next
to the session (``<file>.torn-<n>``), syncs it, and only then cuts them from the
session and syncs that. Nothing else is ever changed: a file with any other damage is
refused by name, before anything is written, because it needs a person, not a tool.
It takes the writer's lock, so a session another process is writing is not touched.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .durable import fsync_dir
from .errors import SessionLocked
from .filelock import try_lock
from .log import read_tree
from .tree import SessionTree


@dataclass(frozen=True)
class RepairResult:
    path: Path
    sidecar: Path | None
    """Where the torn bytes went; ``None`` when there was nothing to repair."""
    moved_bytes: int
    entries: int


def _sidecar_for(path: Path) -> Path:
    number = 1
    while True:
        candidate = path.with_name(f"{path.name}.torn-{number}")
        if not candidate.exists():
            return candidate
        number += 1


def repair(path: Path | str) -> RepairResult:
    path = Path(path)
    fd = os.open(path, os.O_RDWR)
    try:
        if not try_lock(fd):
            raise SessionLocked(path)
        data = path.read_bytes()
        cut = data.rfind(b"\n") + 1
        torn = data[cut:]
        if not torn:
            tree = read_tree(path)
            return RepairResult(path, None, 0, len(tree))
        kept = data[:cut]
        if kept:
            SessionTree.load(path, kept)
        sidecar = _sidecar_for(path)
        with open(sidecar, "xb") as out:
            out.write(torn)
            out.flush()
            os.fsync(out.fileno())
        fsync_dir(path.parent)
        os.ftruncate(fd, cut)
        os.fsync(fd)
        entries = len(SessionTree.load(path, kept)) if kept else 0
        return RepairResult(path, sidecar, len(torn), entries)
    finally:
        os.close(fd)
