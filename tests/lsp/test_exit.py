"""The server's process ends as soon as it is over, without Python's own teardown.

That teardown (some 600 modules and their objects) cost an idle server a fifth of its
CPU, and on a loaded machine (load 17-19 on two cores) it kept the editor, and the
test helper's 10 s bound, waiting 5-10 s after ``exit`` for the process to go. Whether
it ran is told by an ``atexit`` hook a ``sitecustomize`` of the test's own installs
in the server (an interpreter's teardown runs its ``atexit`` hooks): it must not
have written its file, while the exit status and the log file are as they were.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from .helpers import server_env
from .test_wire import Raw, initialize

HOOK = """import atexit, os
atexit.register(lambda: open(os.environ["TEARDOWN_MARK"], "w").close())
"""


@pytest.mark.parametrize(("shutdown", "code"), [(True, 0), (False, 1)])
async def test_exit_ends_the_process_without_the_interpreters_teardown(
    tmp_path: Path, shutdown: bool, code: int
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(HOOK)
    mark = tmp_path / "teardown-ran"
    env = server_env(tmp_path)
    env.update(PYTHONPATH=f"{site}{os.pathsep}{env['PYTHONPATH']}", TEARDOWN_MARK=str(mark))
    log_file = tmp_path / "server.log"
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "crank.lsp", "--log-level", "DEBUG", "--log-file", str(log_file)),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=env,
    )
    raw = Raw(process)
    await initialize(raw, tmp_path)
    if shutdown:
        raw.send({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
        await raw.answer(2)
    raw.send({"jsonrpc": "2.0", "method": "exit"})
    assert await asyncio.wait_for(process.wait(), 60) == code  # a hang bound, not a clock
    assert not mark.exists(), "the interpreter's teardown ran after exit"
    logged = log_file.read_text()
    assert "answered initialize" in logged  # the log file was flushed before the end
