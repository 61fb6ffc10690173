"""``crank sessions list | show | repair`` through argparse, on real files."""

from __future__ import annotations

import argparse
import io
import os
import signal
import subprocess
import sys
from pathlib import Path

from crank.agent.images import human_bytes, image_block, sha256_of
from crank.agent.messages import assistant_message, tool_result, user_message
from crank.cli.sessions import add_sessions_parser
from crank.session import SessionStore
from tests.support.images import png


def run(*argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="crank")
    add_sessions_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    out, err = io.StringIO(), io.StringIO()
    code = args.handler(args, out, err)
    return code, out.getvalue(), err.getvalue()


def make_session(tmp_path: Path) -> tuple[SessionStore, str]:
    store = SessionStore(tmp_path / "ws", tmp_path / "s")
    with store.create() as log:
        log.append_message_sync(user_message("Explain the build"))
        reply = assistant_message([{"type": "text", "text": "It uses hatch."}])
        log.append_message_sync(reply)
        return store, log.session_id


def test_list_and_show(tmp_path: Path) -> None:
    _, session_id = make_session(tmp_path)
    common = ("sessions", "--workspace", str(tmp_path / "ws"), "--session-dir", str(tmp_path / "s"))
    code, out, _ = run(*common, "list")
    assert code == 0 and session_id in out and "2 messages" in out and "Explain the build" in out
    code, out, _ = run(*common, "show", session_id[:12])
    assert code == 0
    assert "user: Explain the build" in out and "assistant: It uses hatch." in out


def test_show_unknown_and_repair(tmp_path: Path) -> None:
    store, session_id = make_session(tmp_path)
    common = ("sessions", "--workspace", str(tmp_path / "ws"), "--session-dir", str(tmp_path / "s"))
    code, _, err = run(*common, "show", "nope")
    assert code == 1 and "no session 'nope'" in err
    path = store.path_of(session_id)
    with path.open("ab") as file:
        file.write(b'{"type":"mes')
    code, _, err = run(*common, "show", session_id)
    assert code == 1 and "crank sessions repair" in err
    code, out, _ = run(*common, "repair", str(path))
    assert code == 0 and "moved 12 torn bytes" in out
    assert Path(f"{path}.torn-1").read_bytes() == b'{"type":"mes'
    code, out, _ = run(*common, "repair", str(path))
    assert "nothing to repair" in out


def test_prefixes_and_suffixes_and_ambiguity(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "ws", tmp_path / "s")
    ids = []
    for _ in range(2):
        with store.create() as log:
            ids.append(log.session_id)
    first = ids[0]
    assert store.path_of(first[-6:]).name == f"{first}.jsonl"
    assert store.path_of(first[:-1]).name == f"{first}.jsonl"
    common = ("sessions", "--workspace", str(tmp_path / "ws"), "--session-dir", str(tmp_path / "s"))
    shared = next(ids[0][:n] for n in range(len(ids[0]), 0, -1) if ids[1].startswith(ids[0][:n]))
    code, _, err = run(*common, "show", shared)
    assert code == 1
    assert f"session id {shared!r} is ambiguous" in err and ids[0] in err and ids[1] in err
    assert "give more of the id" in err


def test_the_listing_marks_failed_and_aborted_sessions(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "ws", tmp_path / "s")
    ends = {}
    for stop in ("stop", "error", "aborted"):
        with store.create() as log:
            log.append_message_sync(user_message(f"ask {stop}"))
            log.append_message_sync(
                assistant_message(
                    [], stop_reason=stop, error_message="x" if stop != "stop" else None
                )
            )
            ends[stop] = log.session_id
    common = ("sessions", "--workspace", str(tmp_path / "ws"), "--session-dir", str(tmp_path / "s"))
    code, out, _ = run(*common, "list")
    lines = {line.split()[0]: line for line in out.splitlines()}
    assert code == 0
    assert lines[ends["error"]].endswith("[failed]")
    assert lines[ends["aborted"]].endswith("[aborted]")
    assert "[" not in lines[ends["stop"]]
    # A later happy reply clears the mark (the cache is updated from where it stopped).
    with SessionStore(tmp_path / "ws", tmp_path / "s").open(ends["error"]) as log:
        log.append_message_sync(user_message("again"))
        log.append_message_sync(assistant_message([{"type": "text", "text": "ok"}]))
    _, out, _ = run(*common, "list")
    assert "[failed]" not in out and "[aborted]" in out


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """``crank sessions list | head -1`` printed ``crank: Broken pipe: None`` and exit 1.
    The reading end is closed before the command writes, so the write must fail."""
    store = SessionStore(tmp_path / "ws", tmp_path / "s")
    with store.create() as log:
        log.append_message_sync(user_message("hello"))
    read_end, write_end = os.pipe()
    os.close(read_end)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "server")}
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "crank.cli",
                "sessions",
                "--workspace",
                str(tmp_path / "ws"),
                "--session-dir",
                str(tmp_path / "s"),
                "list",
            ],
            stdout=write_end,
            stderr=subprocess.PIPE,
            env=env,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.stderr == b""
    assert done.returncode == 128 + signal.SIGPIPE


def test_show_lists_each_messages_images_and_a_missing_blob(tmp_path: Path) -> None:
    small, big, read = png(3, 2), png(100, 100, noise=True), png(90, 90, noise=True)
    store = SessionStore(tmp_path / "ws", tmp_path / "s")
    with store.create() as log:
        images = [image_block(small, "icon.png"), image_block(big, "shot.png")]
        log.append_message_sync(user_message("look", images=images))
        call = {"type": "toolCall", "id": "r1", "name": "read", "arguments": {"path": "x.png"}}
        log.append_message_sync(assistant_message([call]))
        result = tool_result("r1", "read", "Image file x.png", images=[image_block(read)])
        log.append_message_sync(result)
        session_id, blobs = log.session_id, log.blobs
    (blobs / f"{sha256_of(read)}.png").unlink()
    common = ("sessions", "--workspace", str(tmp_path / "ws"), "--session-dir", str(tmp_path / "s"))
    code, out, _ = run(*common, "show", session_id)
    assert code == 0
    lines = out.splitlines()
    at = lines.index("user: look")
    assert lines[at + 1] == f"  image icon.png, image/png, 3x2, {human_bytes(len(small))}, inline"
    assert lines[at + 2] == (
        f"  image shot.png, image/png, 100x100, {human_bytes(len(big))}, "
        f"blob {sha256_of(big)[:12]}…"
    )
    result_at = next(i for i, line in enumerate(lines) if line.startswith("result read"))
    assert lines[result_at + 1] == (
        f"  image image/png, 90x90, {human_bytes(len(read))}, "
        f"blob {sha256_of(read)[:12]}… [blob missing]"
    )
