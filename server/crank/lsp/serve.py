"""``crank serve``: the language server on stdio (default) or TCP.

Nothing but protocol bytes reaches stdout: the real stdout is kept for the transport
and ``sys.stdout`` is pointed at stderr, so a stray print cannot corrupt a frame.
End of input (the editor went away) aborts running runs, flushes the session logs
and exits 0; ``exit`` exits 0 after ``shutdown`` and 1 without it, as LSP says.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import threading
from typing import Any, BinaryIO

from pygls.io_ import StdinAsyncReader, StdoutWriter, run_async

from crank.vendors import RedactingFormatter

from .server import CrankServer, build_server

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
        # pygls logs every error answer with a traceback; ours are expected refusals.
        logging.getLogger("pygls.protocol.json_rpc").setLevel(logging.CRITICAL)


def _error_handler(server: CrankServer) -> Any:
    def handle(exc: Exception, _source: Any) -> None:
        if isinstance(exc, json.JSONDecodeError | UnicodeDecodeError):
            server.protocol._send_data(
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": -32700, "message": f"Parse error: {exc}"},
                }
            )
        else:
            log.error("a message could not be handled: %s", exc)

    return handle


async def _serve(server: CrankServer, reader: Any) -> None:
    stop = threading.Event()
    server._stop_event = stop
    try:
        await run_async(
            stop_event=stop,
            reader=reader,
            protocol=server.protocol,
            logger=log,
            error_handler=_error_handler(server),
        )
    finally:
        await server.close_all()


async def _pipe_reader(stdin: BinaryIO, server: CrankServer) -> Any:
    """stdin as an asyncio stream: no reader thread, so nothing can keep the process
    alive after exit. A stdin that is not a pipe (a file) falls back to pygls's
    threaded reader."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**24)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    except (ValueError, OSError):
        return StdinAsyncReader(stdin, server.thread_pool)
    return reader


def serve_stdio(server: CrankServer, stdin: BinaryIO, stdout: BinaryIO) -> int:
    server.protocol.set_writer(StdoutWriter(stdout))

    async def run() -> None:
        await _serve(server, await _pipe_reader(stdin, server))

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
                await _serve(server, reader)
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
