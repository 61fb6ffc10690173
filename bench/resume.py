"""Resume figures: what a user waits for when an editor opens a long session, on a real
server process.

    .venv/bin/python bench/resume.py [--quick] [--repeat N] [--before OTHER/server]

For 10,000 messages / 50 MB and 50,000 messages / 46 MB (``bench/synthetic_session.py``,
spelled by the log's own encoder), and the same 50,000 messages with a compaction every
1,000 (as a run that outgrew a 200k-token window writes them: the model is shown only
what follows the newest, and each records what the history before it used, so the open
leaves that history unread, see ``crank/session/tree.py``), and the same again as a
writer before ``usageBefore`` wrote it (its history decoded at the open, once, see
``crank/session/deferred.py``): a ``crank serve`` process (``python -m crank.lsp``)
is started on a workspace whose newest session is a tiny one (the server resumes that
at start), then asked over stdio what both editors ask when a session is opened:
``crank/openSession``, then ``crank/state`` (the context meter) and ``crank/messages``
(the transcript's newest page, ``limit`` 400), one after the other, as VS Code's chat
refreshes; then, apart, the whole transcript. The files are opened as their writer
keeps them, with their offset index (``crank/session/offsets.py``; written by an open
before the first figure), and the uncompacted ones also without it (``first open``:
a file an older Crank wrote, whose open reads every line and writes the index).
Printed, medians of a few fresh servers:
the time from sending each request to the last byte of its answer (the bench's own
decoding of the answer is not counted), the three together, and the process's peak
resident memory over the three (``VmHWM``, reset just before the open through
``/proc/<pid>/clear_refs``) next to its resident memory before it; and, in
this process, the floor any reader pays for the file (``floor``). The load average is
printed first and last: the machine is shared.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from synthetic_session import write_session  # noqa: I001 (bench/ is on sys.path)

from crank.session.entries import encode, make_header
from crank.session.store import workspace_key


COMPACTED, UNRECORDED = "compacted", "compacted, no usageBefore"
FIRST = "first open"
"""This checkout, the file's offset index taken away before each server: the open of a
file an older Crank wrote, or one whose index was lost, which reads every line and
writes the index (``crank/session/offsets.py``). Every other figure of this checkout
is of a file that has its index, as every file its writer keeps has."""
SIZES = (
    (10_000, 50.0, ""),
    (50_000, 46.0, ""),
    (50_000, 46.0, COMPACTED),
    (50_000, 46.0, UNRECORDED),
)
"""About the same bytes in five times the messages: resume should follow the bytes; then
the long one as a long run writes it, compacted, and as a writer before ``usageBefore``
wrote it (the file ``--before`` is compared on: it opens the other as a file from a
newer writer, every line eagerly; opened here as that writer left it, with no index)."""


def load() -> str:
    return Path("/proc/loadavg").read_text().split(" ", 3)[:3].__str__()


def status_mib(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise LookupError(field)


class Server:
    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "crank.lsp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        self.next_id = 0

    def send(self, method: str, params: dict[str, Any], notify: bool = False) -> int:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if not notify:
            self.next_id += 1
            message["id"] = self.next_id
        body = json.dumps(message).encode()
        assert self.proc.stdin
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()
        return self.next_id

    def answer(self, number: int) -> dict[str, Any]:
        return self.timed_answer(number)[0]

    def timed_answer(self, number: int) -> tuple[dict[str, Any], float]:
        """The answer to request ``number``, and when its last byte arrived."""
        while True:
            body, arrived = self.read_body()
            message: dict[str, Any] = json.loads(body)
            if message.get("id") == number and "method" not in message:
                if "error" in message:
                    raise RuntimeError(message["error"])
                return message, arrived

    def read(self) -> dict[str, Any]:
        message: dict[str, Any] = json.loads(self.read_body()[0])
        return message

    def read_body(self) -> tuple[bytes, float]:
        out = self.proc.stdout
        assert out
        length = 0
        while (line := out.readline()) not in (b"\r\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        if not length:
            raise EOFError("the server closed its stdout")
        body = out.read(length)
        return body, time.perf_counter()

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


PAGE = 400
"""The ``limit`` VS Code's chat sends ``crank/messages`` (``TRANSCRIPT_PAGE``; Neovim's
is 1,000). A server from before pages answers it with the whole transcript, as it
answered the chats of its day."""

Figures = tuple[float, float, float, float, float, float]
"""openSession, state, messages as the chat asks (its newest page) and the whole
transcript (seconds), peak and resident memory before (MiB)."""


def one_open(env: dict[str, str], workspace: Path, session_id: str) -> Figures:
    server = Server(env)
    try:
        folder = {"uri": workspace.as_uri(), "name": "ws"}
        params = {"capabilities": {}, "workspaceFolders": [folder]}
        server.answer(server.send("initialize", params))
        server.send("initialized", {}, notify=True)
        server.answer(server.send("crank/state", {"workspace": folder["uri"]}))
        pid = server.proc.pid
        before = status_mib(pid, "VmRSS")
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM starts again from VmRSS
        asked = {"workspace": folder["uri"], "sessionId": session_id}
        times: list[float] = []
        peak = 0.0
        extra: dict[str, Any]
        for method, extra in (
            ("crank/openSession", {}),
            ("crank/state", {}),
            ("crank/messages", {"limit": PAGE}),
            ("crank/messages", {}),  # after the peak is read: no chat asks for it
        ):
            if len(times) == 3:
                peak = status_mib(pid, "VmHWM")
            began = time.perf_counter()
            _, arrived = server.timed_answer(server.send(method, {**asked, **extra}))
            times.append(arrived - began)
        return times[0], times[1], times[2], times[3], peak, before
    finally:
        server.close()


def floor(path: Path, runs: int) -> str:
    """What any reader of the file at ``path`` pays, in this process (medians of
    ``runs``): reading its bytes, one validating decode of its lines that reads each
    message's role and usage only (``deferred.py``'s), and decoding every line into
    dicts, as an eager read does; then the tree as an open reads it, and the same with
    any history it left unread read too (what the first append after the open, or
    ``crank/tree``, pays)."""
    import msgspec

    from crank.session import deferred, offsets
    from crank.session.tree import SessionTree

    data = path.read_bytes()
    lines = data[data.index(b"\n") + 1 :]
    steps: dict[str, Callable[[], object]] = {
        "read": path.read_bytes,
        "the offset index's rows, checked": lambda: offsets.read(path, len(data)),
        "one decode, messages to role and usage": lambda: deferred._decode_zone(lines),
        "every line into dicts": lambda: msgspec.json.Decoder().decode_lines(lines),
        "the open's tree": lambda: SessionTree.read(path),
        "the whole tree": lambda: SessionTree.read(path).complete(),
    }
    shown = []
    for name, step in steps.items():
        took = []
        for _ in range(runs):
            began = time.perf_counter()
            step()
            took.append(time.perf_counter() - began)
        shown.append(f"{name} {statistics.median(took) * 1000:.0f} ms")
    return "; ".join(shown)


def main() -> None:
    quick = "--quick" in sys.argv
    runs = 1 if quick else 5
    if "--repeat" in sys.argv:  # more fresh servers per figure, for a loaded machine
        runs = int(sys.argv[sys.argv.index("--repeat") + 1])
    sources = [("this checkout", str(Path(__file__).resolve().parents[1] / "server"))]
    if "--before" in sys.argv:  # another checkout's server/, run alternately with this one
        sources.append(("before", sys.argv[sys.argv.index("--before") + 1]))
    print(f"load average at start: {load()} (2 shared cores)")
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        workspace = home / "ws"
        workspace.mkdir()
        env = dict(
            os.environ,
            HOME=str(home),
            XDG_DATA_HOME=str(home / "data"),
            XDG_CONFIG_HOME=str(home / "config"),
            XDG_STATE_HOME=str(home / "state"),
            XDG_CACHE_HOME=str(home / "cache"),
        )
        sessions = home / "data" / "crank" / "sessions" / workspace_key(workspace)
        sessions.mkdir(parents=True)
        figures: dict[str, list[float]] = {label: [] for label, _ in sources}
        """Per source, what the user waits for (the three requests) at each size."""
        for messages, megabytes, shape in SIZES:
            session_id = f"bench-{messages}-{shape.replace(', ', '-').replace(' ', '-')}"
            path = sessions / f"{session_id}.jsonl"
            size = write_session(
                path, messages, megabytes, compacted=bool(shape), recorded=shape != UNRECORDED
            )
            # A newer, tiny session: the one the server resumes at start.
            tiny = sessions / "tiny.jsonl"
            tiny.write_bytes(encode(make_header("tiny", str(workspace))))
            os.utime(tiny, (time.time() + 10, time.time() + 10))
            results: dict[str, list[Figures]] = {name: [] for name, _ in sources}
            here = [
                (label, server)
                for label, server in sources
                if label != "before" or shape != COMPACTED
            ]
            if not shape:  # also the first open, which writes the index (FIRST)
                here.append((FIRST, sources[0][1]))
                results[FIRST] = []
            index = path.with_name(f".{path.name}.index")  # crank/session/offsets.py
            for _ in range(runs):
                for label, server in here:
                    if label == FIRST or shape == UNRECORDED:  # an older writer's file
                        index.unlink(missing_ok=True)
                    elif not index.exists() and not shape:  # written as a writer does
                        one_open(dict(env, PYTHONPATH=sources[0][1]), workspace, session_id)
                    one_env = dict(env, PYTHONPATH=server)
                    results[label].append(one_open(one_env, workspace, session_id))
            print(f"{'floor':>13}: {messages:>6} messages, in process: {floor(path, runs)}")
            for label, _ in here:
                opened, state, listed, whole, peak, before = (
                    statistics.median(f) for f in zip(*results[label], strict=True)
                )
                waited = statistics.median(sum(r[:3]) for r in results[label])
                if label != FIRST:
                    figures[label].append(waited)
                print(
                    f"{label:>13}: {messages:>6} messages, {size / 1e6:.0f} MB"
                    f"{', ' + shape if shape else ''}: "
                    f"openSession {opened * 1000:5.0f} ms, state {state * 1000:5.0f} ms, "
                    f"messages (limit {PAGE}) {listed * 1000:5.0f} ms, together "
                    f"{waited * 1000:5.0f} ms; the whole transcript {whole * 1000:5.0f} ms; "
                    f"peak RSS {peak:6.1f} MiB (before the open {before:.1f} MiB; "
                    f"median of {runs})"
                )
        for label, (small, large, *_) in figures.items():
            print(
                f"{label:>13}: ratio {SIZES[1][0]:,} / {SIZES[0][0]:,} messages, the three "
                f"together {large / small:.2f} (the files are about the same size: 1.0 "
                "follows the bytes; goal at 50,000 messages: under 150 ms and 150 MiB)"
            )
        if len(sources) == 2:
            ours, theirs = figures[sources[0][0]], figures[sources[1][0]]
            for shape, now, then in (
                ("", ours[1], theirs[1]),
                (
                    f", {COMPACTED} (before: {UNRECORDED}, as its writer wrote it)",
                    ours[2],
                    theirs[2],
                ),
                (f", {UNRECORDED}", ours[3], theirs[2]),
            ):
                print(
                    f"{SIZES[1][0]:,} messages{shape}: this checkout takes "
                    f"{now / then:.2f} of the time before (the three together)"
                )
    print(f"load average at end: {load()}")


if __name__ == "__main__":
    main()
