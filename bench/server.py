"""Editor server figures: per-delta overhead, prompt to first event, start-up, idle RSS.

    .venv/bin/python bench/server.py

Per-delta overhead: a scripted reply of N one-character deltas run through a bare
Harness, then through a WorkspaceHost whose client frames every crank/event exactly as
the server does (into /dev/null); the difference divided by N, for N = 10,000 and
100,000 (linear if the two agree). Prompt to first event: host.prompt_run to the
agent_start frame, in process. Start-up: spawn `python -m crank.lsp` to the
`initialize` answer. Memory: resident set of an idle server with three workspaces.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from crank.agent.harness import Harness
from crank.agent.scripted import Reply, ScriptedModel
from crank.lsp.editor import frame
from crank.tools import NoDocuments
from crank.workspace import Settings, WorkspaceHost


class NullClient:
    def __init__(self) -> None:
        self.documents = NoDocuments()
        self.out = open(os.devnull, "wb")  # noqa: SIM115
        self.first: float | None = None

    def send_event(self, params: dict[str, Any]) -> None:
        if self.first is None:
            self.first = time.perf_counter()
        self.out.write(frame({"jsonrpc": "2.0", "method": "crank/event", "params": params}))

    async def apply_edit(self, path: Path, old: str, new: str) -> None: ...

    async def ask_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"decision": "allow"}

    def log(self, message: str) -> None: ...


async def bare(n: int) -> float:
    model = ScriptedModel([Reply(text="x" * n)], chunk_size=1)
    harness = Harness(system="s", tools=[], model=model)
    began = time.perf_counter()
    await harness.prompt("go").wait()
    return time.perf_counter() - began


async def hosted(n: int, root: Path) -> tuple[float, float]:
    client = NullClient()
    settings = Settings(session_dir=str(root / "sessions"))
    host = WorkspaceHost(root.as_uri(), root, client, settings, resume_last=False)
    await host.start()
    host.harness.set_model(ScriptedModel([Reply(text="x" * n)], chunk_size=1))
    host.config_error = None
    client.first = None
    began = time.perf_counter()
    host.prompt_run("go")
    run = host.harness.current_run
    assert run is not None
    await run.wait()
    took = time.perf_counter() - began
    first = (client.first or began) - began
    await host.close()
    return took, first


async def in_process() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        firsts: list[float] = []
        for n in (10_000, 100_000):
            overheads = []
            for _ in range(3):
                base = await bare(n)
                took, first = await hosted(n, root)
                overheads.append((took - base) / n * 1e6)
                firsts.append(first * 1e3)
            print(
                f"per-delta server overhead, {n:,} deltas: "
                f"median {statistics.median(overheads):.2f} us (3 runs)"
            )
        print(f"crank/prompt to first event: median {statistics.median(firsts):.2f} ms")


def startup_and_memory() -> None:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "server"))
    with tempfile.TemporaryDirectory() as tmp:
        env.update(HOME=tmp, XDG_DATA_HOME=f"{tmp}/d", XDG_CONFIG_HOME=f"{tmp}/c")
        folders = []
        for name in ("a", "b", "c"):
            Path(tmp, name).mkdir()
            folders.append({"uri": Path(tmp, name).as_uri(), "name": name})
        times = []
        rss: list[float] = []
        for attempt in range(5):
            began = time.perf_counter()
            proc = subprocess.Popen(
                [sys.executable, "-m", "crank.lsp"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
            )
            assert proc.stdin and proc.stdout

            def send(message: dict[str, Any], proc: subprocess.Popen[bytes] = proc) -> None:
                body = json.dumps(message).encode()
                assert proc.stdin
                proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
                proc.stdin.flush()

            send(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {"capabilities": {}, "workspaceFolders": folders},
                }
            )
            read_message(proc)
            times.append((time.perf_counter() - began) * 1e3)
            if attempt < 3:
                send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
                for number, workspace in enumerate(folders, start=2):
                    # crank/state waits until that workspace's host is ready
                    params = {"workspace": workspace["uri"]}
                    send(
                        {"jsonrpc": "2.0", "id": number, "method": "crank/state", "params": params}
                    )
                    while "id" not in read_message(proc):
                        pass
                time.sleep(1)
                for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        rss.append(int(line.split()[1]) / 1024)
            proc.stdin.close()
            proc.wait(timeout=10)
        print(f"start-up to initialize answer: median {statistics.median(times):.0f} ms")
        print(
            "idle resident memory with 3 workspaces (ready): "
            f"median {statistics.median(rss):.1f} MiB over {len(rss)} servers"
        )


def read_message(proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    """One whole framed message from the server's stdout."""
    assert proc.stdout
    length = 0
    while (line := proc.stdout.readline()) not in (b"\r\n", b""):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    message: dict[str, Any] = json.loads(proc.stdout.read(length))
    return message


if __name__ == "__main__":
    asyncio.run(in_process())
    startup_and_memory()
