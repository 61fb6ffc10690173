"""Work counted instead of timed: the lines of Crank's own code a piece of work
executes (``sys.settrace``). A Python-level pass over a transcript adds lines in
proportion to its length; what runs at C speed adds none. On a shared machine a count
is repeatable where a time is not (tests/session/test_flat_costs.py says more)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import FrameType
from typing import Any

CRANK = str(Path(__file__).resolve().parents[2] / "server" / "crank")


class LineCounter:
    """Counts the lines executed in crank's own modules; ``lines`` may be read at any
    time (the long-run tests read it per turn)."""

    def __init__(self) -> None:
        self.lines = 0

    def _local(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            self.lines += 1
        return self._local

    def _global(self, frame: FrameType, event: str, arg: Any) -> Any:
        return self._local if frame.f_code.co_filename.startswith(CRANK) else None

    def __enter__(self) -> LineCounter:
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.settrace(None)
