"""``crank serve``: the language server on stdio (default) or TCP.

Nothing but protocol bytes reaches stdout: the real stdout is kept for the transport
and ``sys.stdout`` is pointed at stderr, so a stray print cannot corrupt a frame.
End of input (the editor went away, or stdin is ``/dev/null``) aborts running runs,
flushes the session logs and exits 0; ``exit`` exits 0 after ``shutdown`` and 1
without it, as LSP says. Bytes go through ``framing.FrameParser`` and
``frames.Inbox``, never pygls's own reader: see those modules for what is tolerated
and what is refused.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import stat
import sys
from collections.abc import Awaitable, Callable
from typing import BinaryIO

from pygls.io_ import StdoutWriter

from crank.vendors import RedactingFormatter

from .frames import Inbox
from .framing import FrameParser
from .server import HANDLERS, CrankServer, build_server

log = logging.getLogger("crank.lsp")


def _parse_address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"--tcp wants HOST:PORT, got {text!r}")
    return host, int(port)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="crank serve", description="Run the Crank editor server.")
    p.add_argument("--stdio", action="store_true", help="speak LSP on stdin/stdout (default)")
    p.add_argument("--tcp", type=_parse_address, metavar="HOST:PORT", help="listen on TCP")
    p.add_argument("--log-file", help="also write the log to this file")
    p.add_argument("--log-level", default="WARNING", help="DEBUG, INFO, WARNING (default), ERROR")
    return p


def _setup_logging(level: str, log_file: str | None) -> None:
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file:
        handlers.append(logging.FileHandler(log_file))
    formatter = RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    for handler in handlers:
        handler.setFormatter(formatter)
    logging.basicConfig(level=level.upper(), handlers=handlers, force=True)
    logging.getLogger("pygls").setLevel(max(logging.WARNING, logging.getLogger().level))
    if logging.getLogger().level > logging.DEBUG:
        # pygls logs every error answer with a traceback; ours are expected refusals,
        # each already logged in one line by frames.Inbox.
        logging.getLogger("pygls.protocol.json_rpc").setLevel(logging.CRITICAL)


ReadChunk = Callable[[], Awaitable[bytes]]
CHUNK = 1 << 16


async def pump(read: ReadChunk, inbox: Inbox) -> None:
    """Read until end of input, handing each delimited frame to the inbox in order."""
    parser = FrameParser()
    while True:
        chunk = await read()
        if not chunk:
            break
        for event in parser.feed(chunk):
            inbox.receive(event)
        await asyncio.sleep(0)  # let handlers run between reads of a fast stream
    for event in parser.end():
        inbox.receive(event)


async def _serve(server: CrankServer, read: ReadChunk) -> None:
    try:
        await pump(read, Inbox(server.protocol, requests=HANDLERS))
    finally:
        await server.close_all()


def _pollable(stdin: BinaryIO) -> bool:
    """Whether the event loop can watch stdin: a pipe, socket or terminal can be; a
    regular file or ``/dev/null`` cannot (epoll refuses them)."""
    try:
        mode = os.fstat(stdin.fileno()).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stdin.isatty()


async def _stdin_reader(stdin: BinaryIO, server: CrankServer) -> ReadChunk:
    """stdin as an asyncio stream when it is pollable: no reader thread, so nothing can
    keep the process alive after exit. Otherwise (a file, ``/dev/null``) reads run in a
    thread, which such a stdin never blocks."""
    loop = asyncio.get_running_loop()
    if _pollable(stdin):
        reader = asyncio.StreamReader(limit=CHUNK)
        try:
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
        except (ValueError, OSError):
            pass
        else:
            return lambda: reader.read(CHUNK)
    read1 = getattr(stdin, "read1", stdin.read)
    return lambda: loop.run_in_executor(server.thread_pool, read1, CHUNK)


def serve_stdio(server: CrankServer, stdin: BinaryIO, stdout: BinaryIO) -> int:
    server.protocol.set_writer(StdoutWriter(stdout))

    async def run() -> None:
        await _serve(server, await _stdin_reader(stdin, server))

    try:
        asyncio.run(run())
    except SystemExit as exit_:
        return int(exit_.code or 0)
    except BrokenPipeError:
        log.warning("the client closed the connection")
    finally:
        server.thread_pool.shutdown(wait=False, cancel_futures=True)
    return 0


def serve_tcp(server: CrankServer, host: str, port: int) -> int:
    async def main() -> None:
        done = asyncio.Event()

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            server.protocol.set_writer(writer)
            try:
                await _serve(server, lambda: reader.read(CHUNK))
            finally:
                writer.close()
                done.set()

        listener = await asyncio.start_server(connection, host, port)
        bound = listener.sockets[0].getsockname()
        print(f"crank: listening on {bound[0]}:{bound[1]}", file=sys.stderr, flush=True)
        async with listener:
            await done.wait()

    try:
        asyncio.run(main())
    except SystemExit as exit_:
        return int(exit_.code or 0)
    return 0


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    _setup_logging(args.log_level, args.log_file)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr
    server = build_server()
    if args.tcp is not None:
        return serve_tcp(server, *args.tcp)
    return serve_stdio(server, stdin, stdout)
