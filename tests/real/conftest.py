"""One real llama-cpp-python server for the whole session (``tests/support/llama_server.py``).

In CI it must start; elsewhere, with no wheel and no ``llama_cpp`` here, every test in
this folder is skipped and the run's summary says in one line how to enable them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import llama_cpp_server, llama_server

_SKIPPED: list[str] = []


@pytest.fixture(scope="session")
def llama() -> Iterator[llama_server.LlamaServer]:
    reason = llama_server.unavailable()
    if reason is not None:
        _SKIPPED.append(reason)
        pytest.skip(reason)
    # Its model's own chat format: it streams, and ignores tools. With a function-calling
    # format it streams nothing for a request that offers tools with tool_choice "auto"
    # (answered unstreamed, whole), and these tests are about streaming, abort and the
    # wall; tests/real/test_local_agents.py runs the function-calling one for tools.
    server = llama_server.start(tools=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def cpp_server() -> Iterator[llama_server.LlamaServer]:
    """The C++ llama-server, with the model's own chat template (no tool support)."""
    reason = llama_cpp_server.unavailable()
    if reason is not None:
        _SKIPPED.append(reason)
        pytest.skip(reason)
    server = llama_cpp_server.start()
    try:
        yield server
    finally:
        server.stop()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _SKIPPED:
        terminalreporter.write_line(_SKIPPED[0])
