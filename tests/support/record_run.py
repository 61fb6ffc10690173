"""Records one real run of ``crank serve`` as the fixtures the client tests feed on.

The VS Code reducer and webview tests and the Neovim chat spec used to read event
streams written by hand; these fixtures are what the server really sends. The script
starts ``python -m crank serve`` over stdio (HOME and the XDG folders in a temporary
directory) with the scripted loopback model (``tests/support/model_server.py``,
Anthropic API, so thinking blocks stream too) and drives one run on a small project
whose ``add()`` subtracts:

1. the prompt; the model thinks, says what it will do and runs ``python3 test_calc.py``,
   which fails (a remembered rule allows ``python3``, so it does not ask);
2. the next model request is refused once with a 529 (``retry_start``/``retry_end``);
3. the model explains with a code block and calls ``edit``: in ``ask`` mode that is a
   ``crank/requestPermission``, where the first part ends (``untilPermission``);
4. allowed: the edit is made, the model re-runs the tests in watch mode (they pass and
   the command keeps running); a steering message is queued (``afterAllow`` ends at
   its ``queue_update``);
5. ``crank/clearQueue`` and ``crank/abort``: the run stops (``afterStop``).

Then it asks ``crank/messages``, ``crank/changes`` and ``crank/state`` and keeps their
answers. Every ``crank/event`` notification and the permission question are written
verbatim except for what differs from one recording to the next: the temporary folder
(written as ``/home/dev``), the session, run and entry ids (numbered in order of first
appearance), timestamps, the prompt's hash, and in ``crank/state`` whether this machine
has bubblewrap. ``comparable`` also merges adjacent deltas of one block (the server
coalesces those that arrive within a few ms, so how a stream is cut depends on the
machine's load) and renumbers ``seq`` to match; the freshness test
(tests/lsp/test_client_fixtures.py) compares recordings that way.

Run it to refresh the fixtures after a change to what the server sends::

    .venv/bin/python -m tests.support.record_run            # writes both fixtures
    .venv/bin/python -m tests.support.record_run --out DIR  # elsewhere (the test does)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from crank.session import workspace_key
from tests.lsp.helpers import server_env
from tests.support.model_server import ModelServer

REPO = Path(__file__).resolve().parents[2]
VSCODE_FIXTURE = Path("vscode-client/test/fixtures/run.json")
NVIM_FIXTURE = Path("nvim-client/tests/fixtures/run.json")
HOME_SHOWN = "/home/dev"
"""What the temporary folder is written as in the fixtures."""
TIMESTAMP = 1764430000000
SANDBOX_SHOWN = "(as on the machine that records)"
PROMPT = "The tests in calc.py fail. Please fix add()."
STEER = "also add a test for negative numbers"
MODEL = "claude-sonnet-4-5"

CALC = "def add(a, b):\n    return a - b\n"
TESTS = '''"""A small test runner: prints pytest-like lines; --watch runs again each time
calc.py is touched, until stopped."""
import os
import sys
import time


sys.dont_write_bytecode = True


def run(first=""):
    import calc

    failed = []
    if calc.add(2, 3) != 5:
        failed.append(f"FAILED test_calc.py::test_add - assert {calc.add(2, 3)} == 5")
    marks = ("F" if failed else ".") + "."
    summary = f"{len(failed)} failed, {2 - len(failed)} passed" if failed else "2 passed"
    lines = [marks.ljust(37) + "[100%]", *failed, summary]
    print(first + "\\n".join(lines), flush=True)  # one write: one output event
    return 1 if failed else 0


seen = os.stat("calc.py").st_mtime_ns  # before the output that says it is watching
status = run()
while "--watch" in sys.argv:
    time.sleep(0.05)
    if os.stat("calc.py").st_mtime_ns != seen:
        seen = os.stat("calc.py").st_mtime_ns
        sys.modules.pop("calc", None)
        run("calc.py changed: running again\\n")
sys.exit(status)
'''

USAGE = {"input": 1200, "output": 180, "cacheRead": 9000, "cacheWrite": 0}
BASH_1 = {"id": "call_bash_1", "name": "bash", "arguments": {"command": "python3 test_calc.py"}}
EDIT = {
    "id": "call_edit_1",
    "name": "edit",
    "arguments": {
        "path": "calc.py",
        "oldText": "def add(a, b):\n    return a - b",
        "newText": "def add(a, b):\n    return a + b",
    },
}
BASH_2 = {
    "id": "call_bash_2",
    "name": "bash",
    "arguments": {"command": "python3 test_calc.py --watch"},
}
EXPLAIN = (
    "`add` subtracts instead of adding:\n\n```python\ndef add(a, b):\n    return a - b\n```"
    "\n\nI'll change the operator to `+`."
)
SCRIPT: dict[str, Any] = {
    "replies": [
        {
            "thinking": "The user says add() is wrong. Run the tests first to see the failure.",
            "text": "I'll run the test suite to see what fails.",
            "toolCalls": [BASH_1],
            "usage": USAGE,
        },
        {"status": 529, "retryAfter": "1", "errorMessage": "Overloaded"},
        {"text": EXPLAIN, "toolCalls": [EDIT], "usage": {**USAGE, "cacheRead": 9200}},
        {"text": "Now re-running the tests.", "toolCalls": [BASH_2], "usage": USAGE},
    ]
}
"""The model's side. ``delayMs`` is added to each reply so that its pieces arrive as
separate deltas on an idle machine (``comparable`` does not depend on it)."""
for _reply in SCRIPT["replies"]:
    _reply.setdefault("delayMs", 15)


# -- the wire ---------------------------------------------------------------------------


class Server:
    """``crank serve`` on stdio: writes requests, reads every frame, answers the
    server's own requests with null (permission questions are left to the caller)."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.frames: list[dict[str, Any]] = []
        """Every message from the server, parsed, in arrival order."""
        self._next_id = 0
        self._changed = asyncio.Event()
        self._reader = asyncio.ensure_future(self._read())
        self._stderr = asyncio.ensure_future(self._drain_stderr())

    def _write(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def notify(self, method: str, params: Any) -> None:
        self._write({"method": method, "params": params})

    async def request(self, method: str, params: Any) -> Any:
        self._next_id += 1
        msg_id = self._next_id
        self._write({"id": msg_id, "method": method, "params": params})
        frame = await self.until(lambda f: f.get("id") == msg_id and "method" not in f)
        if "error" in frame:
            raise RuntimeError(f"{method} failed: {frame['error']}")
        return frame["result"]

    async def until(self, predicate: Any, within: float = 30.0) -> dict[str, Any]:
        """The first frame (from the start) that ``predicate`` holds for."""

        async def scan() -> dict[str, Any]:
            seen = 0
            while True:
                for frame in self.frames[seen:]:
                    if predicate(frame):
                        return frame
                seen = len(self.frames)
                if self._reader.done():
                    self._reader.result()
                    raise EOFError("the server closed stdout")
                self._changed.clear()
                await self._changed.wait()

        return await asyncio.wait_for(scan(), within)

    async def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        try:
            while True:
                header = await stdout.readuntil(b"\r\n\r\n")
                length = int(re.findall(rb"Content-Length: (\d+)", header)[0])
                self._take(json.loads(await stdout.readexactly(length)))
        except asyncio.IncompleteReadError:
            return
        finally:
            self._changed.set()

    def _take(self, frame: dict[str, Any]) -> None:
        self.frames.append(frame)
        self._changed.set()
        if "method" in frame and "id" in frame:
            if frame["method"] == "crank/requestPermission":
                pass  # the scenario answers it (``answer``)
            elif frame["method"] == "workspace/configuration":
                items = frame.get("params", {}).get("items", [])
                self._write({"id": frame["id"], "result": [None] * len(items)})
            else:
                self._write({"id": frame["id"], "result": None})

    def answer(self, frame: dict[str, Any], result: Any) -> None:
        """Answer a request the server sent."""
        self._write({"id": frame["id"], "result": result})

    async def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        while await self.process.stderr.read(1 << 16):
            pass

    async def close(self) -> None:
        await self.request("shutdown", None)
        self.notify("exit", None)
        await asyncio.wait_for(self.process.wait(), 30)
        await asyncio.gather(self._reader, self._stderr)


def make_project(root: Path) -> Path:
    project = root / "calc"
    project.mkdir()
    (project / "calc.py").write_text(CALC)
    (project / "test_calc.py").write_text(TESTS)
    return project


def allow_python(home: Path, project: Path) -> None:
    """An "always allow" rule for ``python3`` commands, as the user's earlier answer
    would have left it (so only the edit asks)."""
    rules = home / "data" / "crank" / "permissions" / f"{workspace_key(project)}.json"
    rules.parent.mkdir(parents=True)
    rules.write_text(json.dumps([{"tool": "bash", "commandPrefix": "python3"}]))


def is_event(frame: dict[str, Any], kind: str | None = None) -> bool:
    if frame.get("method") != "crank/event":
        return False
    return kind is None or frame["params"]["event"]["type"] == kind


async def drive(root: Path) -> dict[str, Any]:
    """Run the scenario in ``root`` (a fresh folder); the raw recording."""
    env = server_env(root)  # HOME and the XDG folders under root / "home"
    home = Path(env["HOME"])
    project = make_project(root)
    allow_python(home, project)
    with ModelServer(SCRIPT) as model:
        options = {
            "provider": {"api": "anthropic", "baseUrl": model.url, "model": MODEL, "apiKey": "x"},
            "sessionDir": str(home / "sessions"),
            "permissionMode": "ask",
            "trusted": True,
            "sandbox": {"mode": "off"},
        }
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "crank",
            "serve",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=str(root),
        )
        server = Server(process)
        try:
            return await scenario(server, project, options)
        except BaseException:
            for frame in server.frames:  # what the server had sent, to see where it stopped
                print(json.dumps(frame)[:300], file=sys.stderr)
            raise
        finally:
            if process.returncode is None:  # the scenario failed: stop the server, as a
                process.terminate()  # user's editor would (a SIGKILL leaves the
                try:  # command it runs behind: its reaper never hears of it)
                    await asyncio.wait_for(process.wait(), 10)
                except TimeoutError:
                    process.kill()
                    await process.wait()


async def scenario(server: Server, project: Path, options: dict[str, Any]) -> dict[str, Any]:
    await server.request(
        "initialize",
        {
            "processId": None,
            "capabilities": {
                "experimental": {"crank": {"events": True, "permissionRequests": True}}
            },
            "workspaceFolders": [{"uri": project.as_uri(), "name": project.name}],
            "initializationOptions": {"crank": options},
        },
    )
    server.notify("initialized", {})
    await server.request("crank/state", {})
    start = len(server.frames)
    started = await server.request("crank/prompt", {"text": PROMPT})
    run_id = started["runId"]

    asked = await server.until(lambda f: f.get("method") == "crank/requestPermission")
    until_permission = server.frames.index(asked) + 1
    server.answer(asked, {"decision": "allow"})

    await server.until(
        lambda f: (
            is_event(f, "tool_execution_update")
            and f["params"]["event"]["toolCallId"] == BASH_2["id"]
        )
    )
    await server.request("crank/steer", {"text": STEER})
    # Inside a run, queue_update goes out with the run's next event: the watching
    # command's next output, once calc.py is touched (its content unchanged).
    os.utime(project / "calc.py")
    queued = await server.until(
        lambda f: is_event(f, "queue_update") and STEER in f["params"]["event"]["steering"]
    )
    after_allow = server.frames.index(queued) + 1
    cleared = await server.request("crank/clearQueue", {})
    stopped = await server.request("crank/abort", {})
    settled = len(server.frames)
    answers = {
        "clearQueue": cleared,
        "abort": stopped,
        "messages": await server.request("crank/messages", {}),
        "changes": await server.request("crank/changes", {"runId": run_id}),
        "state": await server.request("crank/state", {}),
    }
    await server.close()

    def steps(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for frame in frames:
            if is_event(frame):
                out.append({"notify": "crank/event", "params": frame["params"]})
            elif frame.get("method") == "crank/requestPermission":
                out.append({"request": frame["method"], "params": frame["params"]})
        return out

    return {
        "workspace": project.as_uri(),
        "sessionId": started["sessionId"],
        "untilPermission": steps(server.frames[start:until_permission]),
        "afterAllow": steps(server.frames[until_permission:after_allow]),
        "afterStop": steps(server.frames[after_allow:settled]),
        "answers": answers,
    }


# -- what is kept -----------------------------------------------------------------------

_ID_KEYS = ("sessionId", "runId", "entryId", "revertId", "parentId", "tip")
_ID_NAMES = {"sessionId": "session", "runId": "run", "revertId": "run"}
_TIME_KEYS = ("timestamp", "created", "modified")


def normalised(recording: dict[str, Any], root: Path) -> dict[str, Any]:
    """The recording with the temporary folder, ids, timestamps and hashes made stable."""
    ids: dict[str, str] = {}
    counts: dict[str, int] = {}

    def collect(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key in _ID_KEYS and isinstance(item, str) and item not in ids:
                    name = _ID_NAMES.get(key, "entry")
                    counts[name] = counts.get(name, 0) + 1
                    ids[item] = f"{name}-{counts[name]}"
                collect(item)
        elif isinstance(value, list):
            for item in value:
                collect(item)

    def rewrite(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: rewrite(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [rewrite(item, key) for item in value]
        if key in _TIME_KEYS and isinstance(value, int | float):
            return TIMESTAMP
        if key == "hash" and isinstance(value, str):
            return "0" * len(value)
        if key == "baseUrl" and isinstance(value, str):  # the loopback model's free port
            return re.sub(r"^http://127\.0\.0\.1:\d+", "http://127.0.0.1:8080", value)
        if isinstance(value, str):
            for real, shown in (
                (workspace_key(root / "calc"), workspace_key(Path(HOME_SHOWN) / "calc")),
                (root.as_uri(), "file://" + HOME_SHOWN),
                (str(root), HOME_SHOWN),
                *ids.items(),
            ):
                value = value.replace(real, shown)
        return value

    collect(recording)
    rewritten: dict[str, Any] = rewrite(recording)
    # Whether bubblewrap is installed is the machine's, not the server's (mode is off).
    rewritten["answers"]["state"]["sandbox"].update(available=False, detail=SANDBOX_SHOWN)
    return rewritten


def _parts(recording: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """The lists of steps: the three parts, or the Neovim fixture's one."""
    keys = ("untilPermission", "afterAllow", "afterStop", "steps")
    return [recording[key] for key in keys if key in recording]


def comparable(recording: dict[str, Any]) -> dict[str, Any]:
    """A normalised recording with adjacent deltas of one block (and adjacent output
    of one command) merged and ``seq`` renumbered: two recordings of the same server
    compare equal whatever the load did to the stream's cuts."""
    out = json.loads(json.dumps(recording))
    firsts = [step["params"]["seq"] for part in _parts(out) for step in part if "notify" in step]
    seq = firsts[0] if firsts else 0
    for part in _parts(out):
        merged: list[dict[str, Any]] = []
        for step in part:
            last = merged[-1]["params"]["event"] if merged and "notify" in merged[-1] else None
            event = step["params"].get("event") if "notify" in step else None
            if last is not None and event is not None and _joinable(last, event):
                if event["type"] == "message_update":
                    last["delta"]["text"] += event["delta"]["text"]
                else:
                    last["output"] += event["output"]
                continue
            merged.append(step)
        for step in merged:
            if "notify" in step:
                step["params"]["seq"] = seq
                seq += 1
        part[:] = merged
    out["answers"]["state"]["seq"] = seq - 1  # the last event's
    return out  # type: ignore[no-any-return]


def _joinable(last: dict[str, Any], event: dict[str, Any]) -> bool:
    if last["type"] == event["type"] == "message_update":
        a, b = last["delta"], event["delta"]
        return bool(a["kind"] == b["kind"] and a["contentIndex"] == b["contentIndex"])
    if last["type"] == event["type"] == "tool_execution_update":
        return bool(last["toolCallId"] == event["toolCallId"])
    return False


def for_nvim(recording: dict[str, Any]) -> dict[str, Any]:
    """The Neovim spec's fixture: the same run as one list of steps, and the answers."""
    steps = [
        step for key in ("untilPermission", "afterAllow", "afterStop") for step in recording[key]
    ]
    return {
        "workspace": recording["workspace"],
        "sessionId": recording["sessionId"],
        "steps": steps,
        "answers": recording["answers"],
    }


def dumps(value: Any) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False) + "\n"


async def record(root: Path) -> dict[str, Any]:
    """Drive a fresh server in ``root`` (an empty folder, its real path) and return the
    normalised recording."""
    return normalised(await drive(root), root)


def write(recording: dict[str, Any], out: Path) -> list[Path]:
    written = []
    for path, content in ((VSCODE_FIXTURE, recording), (NVIM_FIXTURE, for_nvim(recording))):
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(dumps(content), "utf-8")
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO, help="where the fixture paths go")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="crank-record-") as tmp:
        recording = asyncio.run(record(Path(tmp).resolve()))
    for path in write(recording, args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
