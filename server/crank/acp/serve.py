"""``crank acp``: the Agent Client Protocol on stdio, for Zed, JetBrains and others.

Standard input is read by a thread (so a file, ``/dev/null`` or a pipe all work, and
EOF, SIGTERM or SIGHUP ends the process cleanly: runs are aborted and saved, sessions
released, MCP servers and their process groups ended); every
line goes to the ``Peer`` on the event loop in order. Logs go to stderr or
``--log-file``, never to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import threading
from typing import BinaryIO

from crank.tools.sandbox import SANDBOX_MODES
from crank.vendors import RedactingFormatter
from crank.workspace import PERMISSION_MODES, CrankError, merge_layers

from .agent import CrankAgent, default_host_factory, default_session_lister
from .wire import MAX_LINE_BYTES, Peer


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="crank acp", description="Serve the Agent Client Protocol on stdio."
    )
    p.add_argument("--trust", action="store_true", help="load projects' AGENTS.md and skills")
    p.add_argument("--permission-mode", choices=PERMISSION_MODES, default=None)
    p.add_argument("--session-dir", default=None, help="where session files live")
    p.add_argument(
        "--sandbox",
        choices=SANDBOX_MODES,
        default=None,
        help="how commands are confined (default: workspace-write where bubblewrap works)",
    )
    p.add_argument(
        "--local-commands",
        action="store_true",
        help="run commands here even when the client offers its terminal",
    )
    p.add_argument("--log-file", default=None)
    p.add_argument("--log-level", default="warning")
    return p


END_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
"""Signals that end the connection as EOF does (runs aborted and saved, servers ended)."""

_SKIP_PIECE = 1 << 20
"""How much of an oversized line is read at a time while it is skipped."""


def _read_lines(
    stdin: BinaryIO, loop: asyncio.AbstractEventLoop, peer: Peer
) -> tuple[asyncio.Event, threading.Thread]:
    ended = asyncio.Event()

    def pump() -> None:
        try:
            while line := stdin.readline(MAX_LINE_BYTES + 1):
                if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                    line = b""  # past the bound: refused now, the rest never held
                    loop.call_soon_threadsafe(peer.refuse_oversized)
                    while (rest := stdin.readline(_SKIP_PIECE)) and not rest.endswith(b"\n"):
                        pass
                    continue
                loop.call_soon_threadsafe(peer.receive, line)
        except (OSError, ValueError) as exc:
            logging.getLogger("crank.acp").warning("reading stdin failed: %s", exc)
        finally:
            loop.call_soon_threadsafe(ended.set)

    reader = threading.Thread(target=pump, name="crank-acp-stdin", daemon=True)
    reader.start()
    return ended, reader


async def serve(stdin: BinaryIO, stdout: BinaryIO, options: argparse.Namespace) -> int:
    layer: dict[str, object] = {"trusted": bool(options.trust)}
    if options.permission_mode:
        layer["permissionMode"] = options.permission_mode
    if options.session_dir:
        layer["sessionDir"] = options.session_dir
    if options.sandbox:
        layer["sandbox"] = {"mode": options.sandbox}
    try:
        settings = merge_layers([("crank acp options", layer)])
    except CrankError as exc:
        print(f"crank acp: {exc.message}", file=sys.stderr)
        return 2
    peer = Peer(stdout)
    agent = CrankAgent(  # keys: provider_env()
        peer,
        default_host_factory(settings, None),
        client_terminal=not options.local_commands,
        list_sessions=default_session_lister(settings),
    )
    loop = asyncio.get_running_loop()
    ended, reader = _read_lines(stdin, loop, peer)
    # A client stopping its agent job (Neovim's jobstop, on quit) sends SIGTERM: the
    # same end as the end of input, so MCP servers and their groups end first.
    signalled: list[signal.Signals] = []

    def on_signal(sig: signal.Signals) -> None:
        signalled.append(sig)
        ended.set()

    for sig in END_SIGNALS:
        loop.add_signal_handler(sig, on_signal, sig)
    await ended.wait()
    await asyncio.sleep(0)  # the last lines' handlers have started
    peer.end_of_input()
    await agent.close()  # runs are aborted and saved, so every prompt can answer
    await peer.drain()
    if signalled and reader.is_alive():
        # Ended by a signal: the stdin thread is still in a read, and the interpreter's
        # shutdown would abort on the lock it holds. All is closed and written: leave.
        logging.shutdown()
        stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0


def main(argv: list[str]) -> int:
    options = parser().parse_args(argv)
    handlers: list[logging.Handler] = [
        logging.FileHandler(options.log_file)
        if options.log_file
        else logging.StreamHandler(sys.stderr)
    ]
    for handler in handlers:
        handler.setFormatter(RedactingFormatter(logging.BASIC_FORMAT))
    logging.basicConfig(level=options.log_level.upper(), handlers=handlers, force=True)
    return asyncio.run(serve(sys.stdin.buffer, sys.stdout.buffer, options))
