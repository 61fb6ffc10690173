"""kill -9 at random moments: every announced message is in the file, which still opens."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from crank.session import SessionLog, TornSession, read_tree
from crank.session.repair import repair

SERVER = str(Path(__file__).resolve().parents[2] / "server")

CHILD = """
import asyncio, sys
from pathlib import Path
from crank.agent.messages import user_message
from crank.session import SessionLog

async def main() -> None:
    path = Path(sys.argv[1])
    if path.exists():
        log = SessionLog.open(path)
    else:
        log = SessionLog.create(path.parent, "/w", path.stem)
    listener = log.listener()
    n = 0
    while True:
        n += 1
        event = {"type": "message_end", "message": user_message(f"m{n} " + "x" * (n % 7) * 900)}
        await listener(event)
        print(event["entryId"], flush=True)

asyncio.run(main())
"""


def run_and_kill(path: Path, delay: float) -> list[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)],
        stdout=subprocess.PIPE,
        env={"PYTHONPATH": SERVER},
    )
    announced: list[str] = []
    assert child.stdout is not None
    stream = child.stdout

    def read() -> None:
        for line in stream:
            announced.append(line.decode().strip())

    reader = threading.Thread(target=read)
    reader.start()
    while not announced and child.poll() is None:
        time.sleep(0.01)
    time.sleep(delay)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    reader.join()
    return [entry_id for entry_id in announced if entry_id]


def test_announced_messages_survive_sigkill(tmp_path: Path) -> None:
    path = tmp_path / "crash.jsonl"
    rng = random.Random(7)
    announced: list[str] = []
    for _ in range(4):
        announced += run_and_kill(path, rng.uniform(0.02, 0.3))
        try:
            tree = read_tree(path)
        except TornSession:
            repair(path)
            tree = read_tree(path)
        ids = {entry["id"] for entry in tree.entries}
        assert set(announced) <= ids
    assert len(announced) > 4
    with SessionLog.open(path) as log:
        assert len(log.replay()) == len(log.tree.entries) >= len(announced)
