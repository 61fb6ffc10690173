"""``crank serve``: the editor server (LSP framing on stdio, or TCP)."""

from __future__ import annotations

import argparse
from typing import NoReturn

from crank.lsp import serve


def add_serve_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "serve", help="run the editor server (LSP on stdio)", add_help=False
    )
    parser.add_argument("args", nargs=argparse.REMAINDER, help="see `crank serve --help`")
    parser.set_defaults(handler=run_serve)


def run_serve(args: argparse.Namespace) -> NoReturn:
    run_server(list(args.args))


def run_server(argv: list[str]) -> NoReturn:
    """``crank serve ARGS``: the server's own parser reads ARGS (``--tcp``, ``--log-file``);
    the process ends when the server does (``serve.leave``)."""
    serve.main(argv)
