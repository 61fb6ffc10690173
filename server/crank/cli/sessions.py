"""``crank sessions list | show ID | repair FILE``: the session files, for people.

``show`` lists each message's images under it (name, type, size, inline or the blob
that holds it, and whether that blob is missing or damaged), so a person can see what
``crank/image`` would serve.

Plain text on stdout, errors on stderr with a non-zero exit. ``add_sessions_parser``
plugs the commands into ``crank``'s argparse; each handler returns the exit code.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TextIO

from crank.agent.images import describe
from crank.agent.messages import Message, images_of
from crank.session import SessionError, SessionStore, read_tree, transcript
from crank.session.blobs import BLOB_MISSING, blob_dir, read_blob
from crank.session.branch_summary import render_message
from crank.session.repair import repair

from . import exits

PREVIEW_CHARS = 240


def add_sessions_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("sessions", help="list, show and repair session files")
    parser.add_argument(
        "--workspace", default=None, help="workspace folder (default: the current directory)"
    )
    parser.add_argument(
        "--session-dir", default=None, help="sessions root (default: the per-user data directory)"
    )
    commands = parser.add_subparsers(dest="sessions_command", required=True)
    commands.add_parser("list", help="this workspace's sessions, newest first")
    show = commands.add_parser("show", help="print a session's active branch")
    show.add_argument("session", metavar="ID", help="a session id (or a unique prefix) or a file")
    fix = commands.add_parser("repair", help="move a torn last line into a sidecar file")
    fix.add_argument("file", metavar="FILE")
    parser.set_defaults(handler=run_sessions)


def run_sessions(
    args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr
) -> int:
    store = SessionStore(args.workspace or os.getcwd(), args.session_dir)
    try:
        if args.sessions_command == "list":
            return _list(store, out)
        if args.sessions_command == "show":
            return _show(store, args.session, out)
        return _repair(Path(args.file), out)
    except SessionError as error:
        print(f"crank: {error}", file=err)
        return exits.FAILURE
    except BrokenPipeError:
        raise  # the reader went away (``| head``): main() ends quietly
    except OSError as error:
        print(f"crank: {error.strerror or error}: {error.filename}", file=err)
        return exits.FAILURE


def _list(store: SessionStore, out: TextIO) -> int:
    sessions = store.list()
    if not sessions:
        print(f"no sessions for {store.workspace} (looked in {store.directory})", file=out)
        return exits.OK
    for session in sessions:
        notes = "  [torn: run crank sessions repair]" if session.get("torn") else ""
        if "ended" in session:
            notes += "  [failed]" if session["ended"] == "error" else "  [aborted]"
        if "error" in session:
            notes = f"  [unreadable: {session['error']}]"
        print(
            f"{session['sessionId']}  {session['modified']}  "
            f"{session['messageCount']:>5} messages  {session['title']}{notes}",
            file=out,
        )
    return exits.OK


def _show(store: SessionStore, session: str, out: TextIO) -> int:
    path = Path(session) if session.endswith(".jsonl") else store.path_of(session)
    tree = read_tree(path)
    header = tree.header
    print(f"session {header['id']}  created {header['created']}  cwd {header['cwd']}", file=out)
    print(f"file    {path}  ({len(tree)} entries, tip {tree.tip})", file=out)
    for message in transcript(path, tree.path_to(tree.tip)):
        print(file=out)
        print(render_message(message, PREVIEW_CHARS), file=out)
        for line in image_lines(blob_dir(path), message):
            print(line, file=out)
    return exits.OK


def image_lines(blobs: Path, message: Message) -> list[str]:
    """``  image shot.png, image/png, 100x100, 29.4 KB, blob 0123456789ab…`` for each
    image, ``inline`` when its bytes are in the entry; a blob that cannot be had says
    so (``blob missing``, or why it is unusable)."""
    lines: list[str] = []
    for block in images_of(message):
        sha = block.get("sha256")
        if "data" in block or not isinstance(sha, str):
            where = "inline"
        else:
            where = f"blob {sha[:12]}…"
            found = read_blob(blobs, block)
            if found == BLOB_MISSING:
                where += " [blob missing]"
            elif isinstance(found, str):
                where += f" [blob unusable: {found}]"
        lines.append(f"  image {describe(block)}, {where}")
    return lines


def _repair(path: Path, out: TextIO) -> int:
    result = repair(path)
    if result.sidecar is None:
        print(f"{path}: nothing to repair ({result.entries} entries, all intact)", file=out)
    else:
        print(
            f"{path}: moved {result.moved_bytes} torn bytes, untouched, to {result.sidecar}; "
            f"the session has {result.entries} intact entries and can be written again",
            file=out,
        )
    return exits.OK
