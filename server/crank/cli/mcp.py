"""``crank mcp list``: the MCP servers ``crank run`` would use here, and their tools.

It starts each configured server (the user config file's ``mcpServers``; with
``--trust``, the folder's ``.mcp.json`` servers already approved in an editor), waits
for them like ``crank run`` does, prints one block per server (its source, its state,
its error with the stderr tail, the tools as the model sees them) and stops them.
``--json`` prints ``crank/state``'s ``mcp`` list instead. Exit status 0, or 1 when a
configured server failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import TextIO

from crank.workspace import CrankError
from crank.workspace.mcp import start_for_run


def add_mcp_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("mcp", help="the MCP servers configured here and their tools")
    commands = parser.add_subparsers(dest="mcp_command", required=True)
    listing = commands.add_parser("list", help="start each server, print it and its tools")
    listing.add_argument(
        "--trust", action="store_true", help="include this folder's approved .mcp.json servers"
    )
    listing.add_argument("--json", action="store_true", help="print the servers as JSON")
    parser.set_defaults(handler=run_mcp)


async def _list(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    lines: list[str] = []
    mcp = await start_for_run(Path.cwd(), args.trust, lines.append)
    try:
        servers = mcp.state()
        described = mcp.tool_descriptions()
    finally:
        await mcp.close()
    for line in lines:
        if not any(s.get("error") and s["error"] in line for s in servers):
            print(line, file=err)
    if args.json:
        print(json.dumps(servers, indent=1), file=out)
    elif not servers:
        print("No MCP servers are configured (see docs/mcp.md).", file=out)
    for server in [] if args.json else servers:
        print(
            f"{server['name']}  ({server['source']}, {server['transport']}): {server['state']}",
            file=out,
        )
        if server.get("error"):
            for line in str(server["error"]).splitlines():
                print(f"    ! {line}", file=out)
        for problem in server.get("problems", []):
            print(f"    ! {problem}", file=out)
        for name in server["tools"]:
            about = (described.get(name) or "").strip().splitlines()
            print(f"    {name}" + (f"  {about[0][:100]}" if about else ""), file=out)
    return 1 if any(s["state"] == "failed" for s in servers) else 0


def run_mcp(args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    try:
        return asyncio.run(_list(args, out, err))
    except CrankError as exc:  # a malformed user config file
        print(f"Error: {exc.message}", file=err)
        return 2
