"""The C++ llama-server for a test written in another language (the VS Code e2e,
``vscode-client/test/e2e/local.test.ts``): ``python -m tests.support.serve_llama``
prints one JSON line, ``{"url", "model", "nCtx"}`` once the server listens or
``{"skip": reason}`` when it cannot run here, and stops the server when its stdin
closes (so a test that dies takes the server with it)."""

from __future__ import annotations

import json
import signal
import sys

from tests.support import llama_cpp_server


def main() -> None:
    reason = llama_cpp_server.unavailable()
    if reason is not None:
        print(json.dumps({"skip": reason}), flush=True)
        return
    server = llama_cpp_server.start()
    # A test runner that ends this process by a signal still takes the server with it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        print(
            json.dumps({"url": server.url, "model": server.model, "nCtx": server.n_ctx}), flush=True
        )
        sys.stdin.read()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
