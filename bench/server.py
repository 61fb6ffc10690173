"""Editor server figures: per-delta overhead, prompt to first event, start-up, idle RSS.

    .venv/bin/python bench/server.py

Per-delta overhead: a scripted reply of N one-character deltas run through a bare
Harness, then through a WorkspaceHost whose client frames every crank/event exactly as
the server does (into /dev/null); the difference divided by N, for N = 10,000 and
100,000 (linear if the two agree). Prompt to first event: host.prompt_run to the
agent_start frame, in process, for a new session's first prompt (it creates the session
file) and for the next prompt in that session, over 21 fresh hosts. Start-up: spawn the server to its `initialize`
answer, wall time and the child's CPU time (user + system, read from /proc when the
answer arrives: less sensitive to a loaded machine than wall time), for `python -m
crank.lsp` and `crank serve` (the entry editors run), beside the floor that pygls sets
(a Python that only imports `pygls.lsp.server`, which imports all of
`lsprotocol.types`), with the load average before and after. Memory: resident set of
an idle server with three workspaces.

    .venv/bin/python bench/server.py startup    # the start-up figures alone
    .venv/bin/python bench/server.py first      # prompt to first event alone
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from crank.agent.harness import Harness
from crank.agent.scripted import Reply, ScriptedModel
from crank.lsp.framing import frame
from crank.tools import NoDocuments
from crank.tools.context import OpenDocuments
from crank.workspace import Settings, WorkspaceHost
from crank.workspace.stream import EventParams
from stdio_server import StdioServer


class NullClient:
    def __init__(self) -> None:
        self.documents = NoDocuments()
        self.files = OpenDocuments(self.documents)
        self.terminal = None  # commands run here
        self.out = open(os.devnull, "wb")  # noqa: SIM115
        self.first: float | None = None
        self.first_type = ""

    def send_event(self, params: EventParams) -> None:
        if self.first is None:
            self.first = time.perf_counter()
            self.first_type = params["event"]["type"]
        self.out.write(frame({"jsonrpc": "2.0", "method": "crank/event", "params": params}))

    async def apply_edit(self, path: Path, old_text: str, new_text: str) -> str | None:
        return None

    def commands_changed(self, workspace: str) -> None: ...

    async def ask_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"decision": "allow"}

    def log(self, message: str) -> None: ...


async def bare(n: int) -> float:
    model = ScriptedModel([Reply(text="x" * n)], chunk_size=1)
    harness = Harness(system="s", tools=[], model=model)
    began = time.perf_counter()
    await harness.prompt("go").wait()
    return time.perf_counter() - began


async def hosted(n: int, root: Path) -> float:
    client = NullClient()
    settings = Settings(session_dir=str(root / "sessions"))
    host = WorkspaceHost(root.as_uri(), root, client, settings, resume_last=False)
    await host.start()
    host.harness.set_model(ScriptedModel([Reply(text="x" * n)], chunk_size=1))
    host.model_config.error = None
    began = time.perf_counter()
    host.prompt_run("go")
    run = host.harness.current_run
    assert run is not None
    await run.wait()
    took = time.perf_counter() - began
    await host.close()
    return took


async def in_process() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for n in (10_000, 100_000):
            overheads = []
            for _ in range(3):
                base = await bare(n)
                took = await hosted(n, root)
                overheads.append((took - base) / n * 1e6)
            print(
                f"per-delta server overhead, {n:,} deltas: "
                f"median {statistics.median(overheads):.2f} us (3 runs)"
            )
    await first_events()


FIRST_RUNS = 21


async def prompt_to_first_event(root: Path) -> tuple[float, float]:
    """ms from ``host.prompt_run`` to its ``agent_start`` frame in a fresh host: the new
    session's first prompt (which creates the session file), then the next prompt."""
    client = NullClient()
    settings = Settings(session_dir=str(root / "sessions"))
    host = WorkspaceHost(root.as_uri(), root, client, settings, resume_last=False)
    await host.start()
    host.harness.set_model(ScriptedModel([Reply(text="one"), Reply(text="two")]))
    host.model_config.error = None
    taken: list[float] = []
    for text in ("go", "again"):
        client.first = None
        began = time.perf_counter()
        host.prompt_run(text)
        run = host.harness.current_run
        assert run is not None
        await run.wait()
        assert client.first is not None and client.first_type == "agent_start"
        taken.append((client.first - began) * 1e3)
    await host.close()
    return taken[0], taken[1]


async def first_events() -> None:
    before = load()
    with tempfile.TemporaryDirectory() as tmp:
        pairs = [await prompt_to_first_event(Path(tmp)) for _ in range(FIRST_RUNS)]
    firsts, laters = zip(*pairs, strict=True)
    print(
        f"crank/prompt to first event, median of {FIRST_RUNS} (load average {before} -> "
        f"{load()}): a new session's first prompt {statistics.median(firsts):.2f} ms, "
        f"the next prompt {statistics.median(laters):.2f} ms"
    )


RUNS = 9
ENTRIES = {
    "python -m crank.lsp": [sys.executable, "-m", "crank.lsp"],
    "crank serve": [sys.executable, "-m", "crank.cli", "serve"],
}
FLOOR = [sys.executable, "-c", "import pygls.lsp.server, sys; sys.stdout.write('x')"]


def cpu_ms(pid: int) -> float:
    """User + system CPU the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def time_to_initialize(
    command: list[str], env: dict[str, str], folders: list[Any]
) -> tuple[float, float, float]:
    """Wall and CPU ms from spawning ``command`` to its ``initialize`` answer, and wall
    ms to the answer of ``shutdown`` sent right after it (the full server's first
    answer: on stdio ``initialize`` is answered before the full server is built)."""
    server = StdioServer(command, env)
    server.initialize(folders)
    wall = server.elapsed_ms()
    cpu = cpu_ms(server.pid)
    server.notify("initialized", {})
    server.request(2, "shutdown")
    server.answer(2)
    ready = server.elapsed_ms()
    server.close()
    return wall, cpu, ready


def floor_ms(env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU ms of a Python that imports pygls's server and nothing else."""
    began = time.perf_counter()
    proc = subprocess.Popen(FLOOR, stdout=subprocess.PIPE, env=env)
    assert proc.stdout
    proc.stdout.read(1)
    wall = (time.perf_counter() - began) * 1e3
    cpu = cpu_ms(proc.pid)
    proc.wait(timeout=30)
    return wall, cpu


def startup(env: dict[str, str], folders: list[Any]) -> None:
    """Two conditions per entry: Crank's bytecode cached (as after ``pip install``,
    which compiles it; here in a private PYTHONPYCACHEPREFIX, warmed by one run), and
    Crank's own sources compiled at every start (PYTHONDONTWRITEBYTECODE, as on this
    machine, where an editable install's sources are compiled at each import): a copy
    of the package with no bytecode comes first on the path. The standard library and
    the site-packages (pygls, lsprotocol) keep their bytecode in both. (Until
    2026-12-01 the second condition pointed PYTHONPYCACHEPREFIX at an empty folder,
    which recompiled the standard library and pygls too: 0.5 s too much.)"""
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as copy:
        cached = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
        cached["PYTHONPYCACHEPREFIX"] = cache
        source = Path(__file__).resolve().parents[1] / "server" / "crank"
        shutil.copytree(source, Path(copy) / "crank", ignore=shutil.ignore_patterns("__pycache__"))
        compiled = {k: v for k, v in env.items() if k != "PYTHONPYCACHEPREFIX"}
        compiled.update(PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=copy)
        conditions = {
            f"{name}, {label}": (command, chosen)
            for name, command in ENTRIES.items()
            for label, chosen in (("bytecode cached", cached), ("compiled", compiled))
        }
        for command, chosen in conditions.values():
            time_to_initialize(command, chosen, folders)  # warms the cache
        before = load()
        results: dict[str, list[tuple[float, ...]]] = {name: [] for name in conditions}
        results["floor: import pygls.lsp.server only"] = []
        for _ in range(RUNS):  # alternating, so a change of load hits every condition alike
            for name, (command, chosen) in conditions.items():
                results[name].append(time_to_initialize(command, chosen, folders))
            results["floor: import pygls.lsp.server only"].append(floor_ms(cached))
    print(
        f"start-up to the initialize answer, median of {RUNS} (load average {before} -> {load()});"
        " 'ready': the full server's first answer (shutdown, sent right after initialize):"
    )
    for name, runs in results.items():
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        ready = (
            f", ready {statistics.median(r[2] for r in runs):4.0f} ms" if len(runs[0]) > 2 else ""
        )
        print(f"  {name:42} {wall:6.0f} ms wall, {cpu:6.0f} ms CPU{ready}")


def startup_and_memory() -> None:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "server"))
    with tempfile.TemporaryDirectory() as tmp:
        env.update(HOME=tmp, XDG_DATA_HOME=f"{tmp}/d", XDG_CONFIG_HOME=f"{tmp}/c")
        folders = []
        for name in ("a", "b", "c"):
            Path(tmp, name).mkdir()
            folders.append({"uri": Path(tmp, name).as_uri(), "name": name})
        startup(env, folders)
        rss: list[float] = []
        for _ in range(3):
            server = StdioServer([sys.executable, "-m", "crank.lsp"], env)
            server.initialize(folders)
            server.notify("initialized", {})
            for number, workspace in enumerate(folders, start=2):
                # crank/state waits until that workspace's host is ready
                server.request(number, "crank/state", {"workspace": workspace["uri"]})
                server.answer(number)
            time.sleep(1)
            for line in Path(f"/proc/{server.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    rss.append(int(line.split()[1]) / 1024)
            server.close(timeout=10)
        print(
            "idle resident memory with 3 workspaces (ready): "
            f"median {statistics.median(rss):.1f} MiB over {len(rss)} servers"
        )


if __name__ == "__main__":
    if sys.argv[1:] == ["startup"]:
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "server"))
            env.update(HOME=tmp, XDG_DATA_HOME=f"{tmp}/d", XDG_CONFIG_HOME=f"{tmp}/c")
            Path(tmp, "a").mkdir()
            startup(env, [{"uri": Path(tmp, "a").as_uri(), "name": "a"}])
    elif sys.argv[1:] == ["first"]:
        asyncio.run(first_events())
    else:
        asyncio.run(in_process())
        startup_and_memory()
