"""``crank``: the command line. Each subcommand lives in a module of its own."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from crank import __version__
from crank.vendors.secrets import handover

from . import exits


def build_parser() -> argparse.ArgumentParser:
    # The subcommands are imported here, not at the top: ``crank serve`` and ``crank
    # acp`` are dispatched before any parser is built, so an editor starting the server
    # does not pay for the CLI's renderer (rich) or the demo.
    from .demo import add_demo_parser
    from .mcp import add_mcp_parser
    from .run import add_run_parser
    from .serve import add_serve_parser
    from .sessions import add_sessions_parser

    parser = argparse.ArgumentParser(
        prog="crank", description="An editor backend for a coding agent."
    )
    parser.add_argument("--version", action="version", version=f"crank {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    add_run_parser(commands)
    add_sessions_parser(commands)
    add_serve_parser(commands)
    add_demo_parser(commands)
    add_mcp_parser(commands)
    commands.add_parser(
        "acp", help="serve the Agent Client Protocol on stdio (Zed, JetBrains, ...)", add_help=False
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """The command line. Called without ``argv`` it is the process's entry point:
    provider keys are first moved out of the environment (``handover``), so no
    command the agent runs can read them from ``/proc/<this pid>/environ``."""
    if argv is None:
        handover()
        argv = sys.argv[1:]
    if argv[:1] == ["serve"]:
        # The server parses its own options: argparse's REMAINDER would refuse a first
        # argument that looks like an option (``crank serve --tcp HOST:PORT``).
        from .serve import run_server

        return run_server(argv[1:])
    if argv[:1] == ["acp"]:
        from crank.acp.serve import main as serve_acp

        return serve_acp(argv[1:])
    _log_to_stderr()
    args = build_parser().parse_args(argv)
    try:
        code: int = args.handler(args)
        sys.stdout.flush()
    except BrokenPipeError:
        return _reader_went_away()
    return code


def _log_to_stderr() -> None:
    """Library warnings (a failed model request, say) are the command's business: it
    reports each failure once, as ``Error: ...``. So the commands log only errors unless
    ``CRANK_LOG_LEVEL`` asks for more (``warning``, ``info``, ``debug``)."""
    level = os.environ.get("CRANK_LOG_LEVEL", "error").upper()
    logging.basicConfig(
        level=level if level in logging.getLevelNamesMapping() else logging.ERROR,
        format="crank: %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


def _reader_went_away() -> int:
    """``crank sessions list | head -1``: the reader closed the pipe, which is how pipes
    end, not a failure to report. Point stdout at /dev/null so the interpreter's own
    flush at exit cannot fail again, and end as a program stopped by SIGPIPE does."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return exits.PIPE_CLOSED


if __name__ == "__main__":
    sys.exit(main())
