"""Which JSON library for session files: stdlib ``json`` against ``orjson`` and ``msgspec``.

    .venv/bin/python bench/json_libs.py        (pip install orjson msgspec first)

On the lines of a 10,000-message / 50 MB session (``bench/synthetic_session.py``):
decoding every line as replay reads them, and encoding every entry as the log writes
them (compact; stdlib also as the log spells it, ``ensure_ascii`` on). Medians of a few
runs, and the load average, are printed; then whether each library reads what the
writer wrote (same objects) and how it treats a lone surrogate (tools keep undecodable
bytes that way), which the log must be able to read back.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from synthetic_session import session_lines


def timed(runs: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        work()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def main() -> None:
    print("load average:", Path("/proc/loadavg").read_text().split()[:3])
    lines = session_lines(10_000, 50.0)[1:]
    size = sum(map(len, lines)) / 1e6
    objects = [json.loads(line) for line in lines]
    decoders: dict[str, Callable[[bytes], Any]] = {"json": json.loads}
    encoders: dict[str, Callable[[Any], bytes]] = {
        "json (ensure_ascii, as written)": lambda o: json.dumps(
            o, ensure_ascii=True, separators=(",", ":"), allow_nan=False
        ).encode("ascii"),
        "json (utf-8)": lambda o: json.dumps(
            o, ensure_ascii=False, separators=(",", ":"), allow_nan=False
        ).encode("utf-8"),
    }
    try:
        import orjson

        decoders["orjson"] = orjson.loads
        encoders["orjson"] = orjson.dumps
    except ImportError:
        print("orjson not installed")
    try:
        import msgspec

        decoders["msgspec"] = msgspec.json.decode
        encoders["msgspec"] = msgspec.json.encode
    except ImportError:
        print("msgspec not installed")
    runs = 5
    base = timed(runs, lambda: [json.loads(line) for line in lines])
    for name, decode in decoders.items():
        took = timed(runs, lambda decode=decode: [decode(line) for line in lines])  # type: ignore[misc]
        same = all(decode(line) == obj for line, obj in zip(lines, objects, strict=True))
        print(
            f"decode {len(lines)} lines, {size:.0f} MB with {name:<8}: {took * 1000:6.0f} ms "
            f"({base / took:.1f}x stdlib), same objects: {same}"
        )
    base = timed(runs, lambda: [encoders["json (ensure_ascii, as written)"](o) for o in objects])
    for name, encode in encoders.items():
        took = timed(runs, lambda encode=encode: [encode(o) for o in objects])  # type: ignore[misc]
        print(
            f"encode {len(objects)} entries with {name:<32}: {took * 1000:6.0f} ms ({base / took:.1f}x)"
        )
    written = json.dumps({"content": "bad byte \udcff kept"}, separators=(",", ":")).encode()
    for name, decode in decoders.items():
        try:
            decode(written)
            outcome = "read"
        except Exception as error:
            outcome = f"refused ({type(error).__name__})"
        print(f"a lone surrogate escaped by the writer (\\udcff), read by {name}: {outcome}")
    for name, encode in encoders.items():
        try:
            encode({"content": "bad byte \udcff kept"})
            outcome = "written"
        except Exception as error:
            outcome = f"refused ({type(error).__name__})"
        print(f"a lone surrogate written by {name}: {outcome}")


if __name__ == "__main__":
    main()
