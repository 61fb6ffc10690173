"""The windows local servers run their models with, kept per (base URL, served model).

llama-cpp-python says its ``n_ctx`` only in a refusal; once learned (or once a server
said it: ``/props``, ``max_model_len``, ...) the figure is written here, so it survives
a model switch in the picker and a restart of Crank, and the meter and the request
budget are right before the first prompt. The file is
``platformdirs.user_data_dir("crank")/windows.json``: ``{"<base URL>\\n<model>": N}``.

A missing, unreadable or corrupt file is an empty cache (never an error: the figure
is learned again); writes go through a temporary file and a rename, so a crash never
leaves half a file.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path

import platformdirs

log = logging.getLogger(__name__)


def default_path() -> Path:
    return Path(platformdirs.user_data_dir("crank", appauthor=False)) / "windows.json"


def _key(base_url: str, model: str) -> str:
    return f"{base_url.rstrip('/')}\n{model}"


class WindowCache:
    """Read on every lookup (another Crank process may have learned a window since)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_path()

    def _read(self) -> dict[str, int]:
        try:
            data = json.loads(self.path.read_text("utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as error:
            log.warning("ignoring the window cache %s: %s", self.path, error)
            return {}
        if not isinstance(data, dict):
            return {}
        return {
            key: value
            for key, value in data.items()
            if isinstance(value, int) and not isinstance(value, bool) and value > 0
        }

    def get(self, base_url: str, model: str) -> int | None:
        return self._read().get(_key(base_url, model))

    def put(self, base_url: str, model: str, window: int) -> None:
        data = self._read()
        key = _key(base_url, model)
        if data.get(key) == window:
            return
        data[key] = window
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".windows-")
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(data, out, indent=1, sort_keys=True)
            os.replace(temporary, self.path)
        except OSError as error:
            log.warning("cannot write the window cache %s: %s", self.path, error)
