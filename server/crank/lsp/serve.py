"""``crank serve``: the language server on stdio (default) or TCP.

Nothing but protocol bytes reaches stdout: the real stdout is kept for the transport
and ``sys.stdout`` is pointed at stderr, so a stray print cannot corrupt a frame.
End of input (the editor went away, or stdin is ``/dev/null``) aborts running runs,
flushes the session logs and exits 0; ``exit`` exits 0 after ``shutdown`` and 1
without it, as LSP says. Bytes go through ``framing.FrameParser`` and
``frames.Inbox``, never pygls's own reader: see those modules for what is tolerated
and what is refused.

On stdio the first ``initialize`` is answered before pygls is imported (``early.py``),
so an editor sees the server start in the time Python takes to start; the full server
is built after that answer and replays what was read (``serve_stdio``'s ``start``).
Only these light modules are imported at the top; the server comes in ``main``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import select
import signal
import stat
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, BinaryIO, NoReturn

from .early import Start, read_start
from .framing import FrameParser

if TYPE_CHECKING:
    from .frames import Inbox
    from .server import CrankServer

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
    from crank.vendors import RedactingFormatter

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


async def pump(read: ReadChunk, inbox: Inbox, parser: FrameParser | None = None) -> None:
    """Read until end of input, handing each delimited frame to the inbox in order
    (``parser``: one that already holds the start of the input, see ``early.py``)."""
    parser = parser or FrameParser()
    while True:
        chunk = await read()
        if not chunk:
            break
        for event in parser.feed(chunk):
            inbox.receive(event)
        await asyncio.sleep(0)  # let handlers run between reads of a fast stream
    for event in parser.end():
        inbox.receive(event)


async def _serve(server: CrankServer, read: ReadChunk, start: Start | None = None) -> None:
    from .frames import Inbox
    from .server import HANDLERS

    inbox = Inbox(server.protocol, requests=HANDLERS)
    try:
        for event in start.events if start else ():
            inbox.receive(event)
        if start is None or not start.ended:
            reading = asyncio.get_running_loop().create_task(
                pump(read, inbox, start.parser if start else None)
            )
            signalled = _end_on_signals(reading)
            try:
                await reading
            except asyncio.CancelledError:
                if not signalled:
                    raise
                log.info("ended by %s: closing as at the end of input", signalled[0].name)
    except BaseException:  # exit (SystemExit), a closed pipe: no one to answer
        await server.close_all()
        raise
    await server.close_all()
    await _answer_in_flight(server)


END_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
"""Signals that end the server as the end of input does: an editor that stops its
language server without ``shutdown`` (a timeout, a crash of its own, a closed
terminal) sends SIGTERM, and the runs must still be saved and every MCP server's
process group ended (each runs in a session of its own, so nothing else ends it)."""


def _end_on_signals(reading: asyncio.Task[None]) -> list[signal.Signals]:
    """Cancel ``reading`` on an end signal; the signals seen (empty: none yet). Where
    the loop cannot take signal handlers (not the main thread), nothing is installed."""
    seen: list[signal.Signals] = []
    loop = asyncio.get_running_loop()

    def on_signal(sig: signal.Signals) -> None:
        seen.append(sig)
        reading.cancel()

    for sig in END_SIGNALS:
        try:
            loop.add_signal_handler(sig, on_signal, sig)
        except (RuntimeError, ValueError, NotImplementedError):
            break
    return seen


ANSWER_GRACE = 10.0
"""At the end of input, how long the requests still being handled have to finish (runs
are aborted first): a client may send ``shutdown`` and close its side at once, or
stdin may be a file, and their answers are still read."""


async def _answer_in_flight(server: CrankServer) -> None:
    from . import pygls_adapter

    pending = pygls_adapter.requests_in_flight(server.protocol)
    if not pending:
        return
    _, late = await asyncio.wait(pending, timeout=ANSWER_GRACE)
    await asyncio.sleep(0)  # the answers are sent by the futures' own done callbacks
    if late:
        log.warning("%d requests were still unanswered at the end of input", len(late))
    log.debug("answered %d requests in flight at the end of input", len(pending) - len(late))


class WithoutEarlyAnswer:
    """pygls's writer, less the one answer ``early.py`` already sent: the replayed
    ``initialize`` is answered again by pygls, and that copy is dropped. It should be
    the same answer; a different one is logged as the bug it is."""

    def __init__(self, writer: Any, start: Start) -> None:
        self.writer = writer
        self.pending = start.answer is not None
        self.start = start

    def write(self, data: bytes) -> Any:
        if self.pending:
            message = _message_of(data)
            if (
                isinstance(message, dict)
                and "method" not in message
                and message.get("id") == self.start.answered
            ):
                self.pending = False
                sent = self.start.answer or {}
                if message.get("result") != sent.get("result"):
                    log.error(
                        "the early initialize answer differs from the server's: %s, not %s",
                        json.dumps(sent),
                        json.dumps(message),
                    )
                return None
        return self.writer.write(data)

    def close(self) -> Any:
        return self.writer.close()


def _message_of(data: bytes) -> Any:
    _, _, body = data.partition(b"\r\n\r\n")
    try:
        return json.loads(body)
    except ValueError:
        return None


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


def read_stdin_start(stdin: BinaryIO, stdout: BinaryIO) -> Start:
    """The start of the input, read straight from the descriptor (nothing is left in a
    buffer the full server would not see), its ``initialize`` answered if it can be."""
    try:
        fd = stdin.fileno()
    except (OSError, ValueError):
        read1 = getattr(stdin, "read1", stdin.read)
        return read_start(lambda: read1(CHUNK), lambda data: _write_all(stdout, data))
    return read_start(lambda: _read_blocking(fd), lambda data: _write_all(stdout, data))


def _read_blocking(fd: int) -> bytes:
    """One read of at most ``CHUNK`` bytes, waiting for them even when the editor
    handed over a non-blocking descriptor (the flag belongs to the pipe, not to us)."""
    while True:
        try:
            return os.read(fd, CHUNK)
        except BlockingIOError:
            select.select([fd], [], [])


def _write_all(stdout: BinaryIO, data: bytes) -> None:
    stdout.write(data)
    stdout.flush()


def serve_stdio(
    server: CrankServer, stdin: BinaryIO, stdout: BinaryIO, start: Start | None = None
) -> int:
    """Serve until end of input; ``start``: what ``read_stdin_start`` already read."""
    from pygls.io_ import StdoutWriter

    writer: Any = StdoutWriter(stdout)
    server.protocol.set_writer(WithoutEarlyAnswer(writer, start) if start else writer)

    async def run() -> None:
        await _serve(server, await _stdin_reader(stdin, server), start)

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


def main(argv: list[str]) -> NoReturn:
    args = parser().parse_args(argv)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr
    start = read_stdin_start(stdin, stdout) if args.tcp is None else None
    _setup_logging(args.log_level, args.log_file)
    if start is not None and start.answer is not None:
        log.info("answered initialize %r before loading the full server", start.answered)
    from .server import build_server

    server = build_server()
    if args.tcp is not None:
        leave(serve_tcp(server, *args.tcp))
    leave(serve_stdio(server, stdin, stdout, start))


def leave(code: int) -> NoReturn:
    """End the process with ``code`` now that the server is over: its runs are aborted
    and saved, every MCP server's group ended, the answers written (``_serve``). What
    is left is the interpreter's teardown of some 600 modules and their objects, which
    costs an idle server a fifth of its CPU (0.28 of 1.35 s, measured) and, on a
    loaded machine (load 17 on two cores), kept the editor waiting 5 s and more for
    the process to go. So the logs and the standard streams are flushed, and the
    process ends without it (``os._exit``): no thread is waited for, and none has
    anything left to do (what remains is at most a read nobody will use)."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(Exception):
            if stream is not None:
                stream.flush()
    os._exit(code)
