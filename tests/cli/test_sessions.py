"""``crank sessions list | show | repair`` through argparse, on real files."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

from crank.agent.messages import assistant_message, user_message
from crank.cli.sessions import add_sessions_parser
from crank.session import SessionStore


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
