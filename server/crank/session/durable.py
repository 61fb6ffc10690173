"""Writing files that survive a crash, for the log, its repair and offset index, the
notes file and the image blobs: every byte written (``write_all``: ``os.write`` may
write fewer), and a new name in a folder kept (``fsync_dir``: a created or renamed
file is durable only once its folder's entry is synced too)."""

from __future__ import annotations

import os
from pathlib import Path


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (a short write goes on from where it stopped)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
