"""Which JSON library for session files: stdlib ``json`` against ``orjson`` and ``msgspec``.

    .venv/bin/python bench/json_libs.py        (pip install orjson msgspec first)

On the lines of a 10,000-message / 50 MB session (``bench/synthetic_session.py``):
decoding every line as replay reads them, and encoding every entry as the log writes
them (compact; stdlib also as the log spells it, ``ensure_ascii`` on). Medians of a few
runs, and the load average, are printed; then whether each library reads what the
writer wrote (same objects), whether it keeps an integer beyond 64 bits, and how it
treats a lone surrogate (tools keep undecodable bytes that way), which the log must be
able to read back.
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

from synthetic_session import sized_lines


def timed(runs: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        work()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def main() -> None:
    print("load average:", Path("/proc/loadavg").read_text().split()[:3])
    lines = sized_lines(10_000, 50.0)[1:]
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

        decoders["msgspec"] = msgspec.json.Decoder().decode
        encoders["msgspec"] = msgspec.json.encode
    except ImportError:
        print("msgspec not installed")
    runs = 5
    took_by = {
        name: timed(runs, lambda decode=decode: [decode(line) for line in lines])  # type: ignore[misc]
        for name, decode in decoders.items()
    }
    base = took_by["json"]
    for name, decode in decoders.items():
        took = took_by[name]
        same = all(decode(line) == obj for line, obj in zip(lines, objects, strict=True))
        print(
            f"decode {len(lines)} lines, {size:.0f} MB with {name:<8}: {took * 1000:6.0f} ms "
            f"({base / took:.1f}x stdlib), same objects: {same}"
        )
    took_by = {
        name: timed(runs, lambda encode=encode: [encode(o) for o in objects])  # type: ignore[misc]
        for name, encode in encoders.items()
    }
    base = took_by["json (ensure_ascii, as written)"]
    for name in encoders:
        took = took_by[name]
        print(
            f"encode {len(objects)} entries with {name:<32}: {took * 1000:6.0f} ms ({base / took:.1f}x)"
        )
    big = b'{"n":-9223372036854775809}'
    for name, decode in decoders.items():
        try:
            outcome = "kept" if decode(big) == json.loads(big) else f"changed to {decode(big)}"
        except Exception as error:
            outcome = f"refused ({type(error).__name__})"
        print(f"an integer just below -2**63, read by {name}: {outcome}")
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
