"""The C++ llama.cpp server for the tests: the static ``llama-server`` build in
``../shared/bin/`` (or ``CRANK_LLAMA_SERVER``) with the same SmolLM2-135M file the
llama-cpp-python tests use (``llama_server.interpreter()`` installs it once).

Started on a free loopback port with ``-c 4096 -t 1`` (a small window, one thread: the
machine has two shared cores) and returned once its log says it listens.
``unavailable()`` gives the line a skip prints when the binary is not here.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.support import llama_server
from tests.support.llama_server import ROOT, LlamaServer, free_port, launched

N_CTX = 4096


def binary() -> Path | None:
    given = os.environ.get("CRANK_LLAMA_SERVER")
    candidates = [Path(given)] if given else []
    # ../shared from the main checkout; ../../shared from a worktree under wt/
    candidates += [up / "shared" / "bin" / "llama-server" for up in (ROOT.parent, ROOT.parents[1])]
    return next((path for path in candidates if path.is_file() and os.access(path, os.X_OK)), None)


def unavailable() -> str | None:
    if binary() is None:
        return "llama-server tests skipped: no ../shared/bin/llama-server (or CRANK_LLAMA_SERVER)"
    return llama_server.unavailable()


def start(*, n_ctx: int = N_CTX, template: Path | None = None) -> LlamaServer:
    """``llama-server -m MODEL --host 127.0.0.1 --port P -c N -t 1`` (``--jinja`` is its
    default); ``template``: a ``--chat-template-file`` instead of the model's own."""
    exe = binary()
    assert exe is not None, unavailable()
    _python, model = llama_server.interpreter()
    port = free_port()
    command = [str(exe), "-m", model, "--host", "127.0.0.1", "--port", str(port)]
    command += ["-c", str(n_ctx), "-t", "1", "--jinja"]
    if template is not None:
        command += ["--chat-template-file", str(template)]
    return launched("llama-server", command, port, model, n_ctx, "listening on")
