"""Making a new name in a folder survive a crash: a created or renamed file is durable
only once its folder's entry is synced too. One helper for the log, its repair, the
notes file and the image blobs."""

from __future__ import annotations

import os
from pathlib import Path


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
