"""What the outgoing encoders cost per message: an event frame (``lsp.framing.frame``),
an ACP line (``acp.wire.Peer._write``), a session line (``session.jsonio.dumps_line``)
and reading it back (``jsonio.loads``), for a typical tool-result event of ~2 KB of
text (ASCII and with non-ASCII), and the same with a lone surrogate in it (the escape
path of agent/wiretext.py, which earlier versions raised on or wrote as is).

    .venv/bin/python bench/encoders.py

Medians of 7 runs of 2,000 messages each, in microseconds per message, plus the load.
"""

from __future__ import annotations

import io
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from crank.acp.wire import Peer
from crank.lsp.framing import frame
from crank.session import jsonio

COUNT = 2000


def event(text: str) -> dict[str, Any]:
    return {
        "workspace": "file:///w",
        "sessionId": "20261201-000000-abcdef12",
        "seq": 12,
        "event": {
            "type": "tool_execution_end",
            "toolCallId": "call_00",
            "result": {"content": text, "isError": False},
        },
    }


def per_message(work: Callable[[], object]) -> float:
    runs = []
    for _ in range(7):
        start = time.perf_counter()
        for _ in range(COUNT):
            work()
        runs.append((time.perf_counter() - start) / COUNT * 1e6)
    return statistics.median(runs)


def main() -> None:
    texts = {
        "ascii": "src/a.py:12: needle\n" * 100,
        "non-ascii": "src/é.py:12: naïve ✓\n" * 100,
        "lone surrogate": "src/bad\udcffname.py:12: needle\n" * 100,
    }
    peer = Peer(io.BytesIO())
    for name, text in texts.items():
        message = event(text)
        results = []
        for label, work in (
            ("frame", lambda m=message: frame(m)),
            ("acp line", lambda m=message: peer._write(m)),
            ("session line", lambda m=message: jsonio.dumps_line(m)),
        ):
            try:
                results.append(f"{label} {per_message(work):6.1f}")
            except (UnicodeError, ValueError) as exc:
                results.append(f"{label} raises {type(exc).__name__}")
        line = jsonio.dumps_line(message)

        def read_back(data: bytes = line) -> object:
            return jsonio.loads(data)

        results.append(f"read back {per_message(read_back):6.1f}")
        print(f"{name:>15}: " + ", ".join(results) + " us/message")
    print("load average: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
