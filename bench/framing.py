"""What reading frames costs since crank serve parses them itself (crank.lsp.framing).

    .venv/bin/python bench/framing.py

Two figures, each a median of 7 runs, at two sizes so that growth shows:
- many small frames (a typical request, ~90 bytes) fed in 64 KiB chunks, as a pipe
  delivers them: microseconds per frame for 10,000 and 100,000 frames;
- one large body (a big file opened in the editor: a didOpen of 1 MB and of 10 MB) fed
  in 64 KiB chunks: milliseconds per MB (the scan for a header inside the body is
  linear, so the two should agree).
Also the load average when it ran: the machine is shared, read the ratios.
"""

from __future__ import annotations

import json
import os
import statistics
import time

from crank.lsp.framing import Frame, FrameParser

CHUNK = 1 << 16


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def feed(stream: bytes) -> int:
    parser = FrameParser()
    count = 0
    for start in range(0, len(stream), CHUNK):
        count += sum(isinstance(e, Frame) for e in parser.feed(stream[start : start + CHUNK]))
    return count


def median_seconds(stream: bytes, expected: int) -> float:
    times = []
    for _ in range(7):
        began = time.perf_counter()
        assert feed(stream) == expected
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def main() -> None:
    small = json.dumps(
        {"jsonrpc": "2.0", "id": 12345, "method": "crank/state", "params": {"workspace": "x"}}
    ).encode()
    for count in (10_000, 100_000):
        seconds = median_seconds(frame(small) * count, count)
        print(f"small frames ({len(small)} B), {count:>7,}: {seconds / count * 1e6:6.2f} us/frame")
    for megabytes in (1, 10):
        text = "x = 1\n" * (megabytes * 1024 * 1024 // 6)
        body = json.dumps(
            {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"text": text}}
        )
        seconds = median_seconds(frame(body.encode()), 1)
        print(f"one body of {megabytes:>2} MB: {seconds / megabytes * 1e3:6.2f} ms/MB")
    print("load average: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
