"""``crank``: the command line. Each subcommand lives in a module of its own."""

from __future__ import annotations

import argparse
import sys

from crank import __version__
from crank.vendors.secrets import handover

from .demo import add_demo_parser
from .run import add_run_parser
from .serve import add_serve_parser, run_server
from .sessions import add_sessions_parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="crank", description="An editor backend for a coding agent."
    )
    parser.add_argument("--version", action="version", version=f"crank {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    add_run_parser(commands)
    add_sessions_parser(commands)
    add_serve_parser(commands)
    add_demo_parser(commands)
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
        return run_server(argv[1:])
    args = build_parser().parse_args(argv)
    code: int = args.handler(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
