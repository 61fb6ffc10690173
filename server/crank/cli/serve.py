"""``crank serve``: the editor server (LSP framing on stdio, or TCP)."""

from __future__ import annotations

import argparse
import importlib
import sys


def add_serve_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("serve", help="run the editor server (LSP on stdio)")
    parser.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio")
    parser.set_defaults(handler=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    try:
        serve = importlib.import_module("crank.lsp.serve")
    except ModuleNotFoundError:
        print("crank: the editor server is not built yet (crank.lsp.serve)", file=sys.stderr)
        return 1
    argv = ["--tcp", args.tcp] if args.tcp else []
    code: int = serve.main(argv)
    return code
