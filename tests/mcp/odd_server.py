"""MCP servers that misbehave, for the cases nobody's real server should show.

Run as ``python odd_server.py MODE``. The FastMCP modes (written with the official
SDK) are well-behaved servers with one odd tool each; the raw modes break the protocol
itself, which no SDK would let them do:

- ``fastmcp``: tools ``crash`` (the process dies mid-call), ``flood`` (writes 2 MB to
  stderr, then answers), ``big`` (answers 10 MB of text), ``sleep`` (sleeps ``seconds``;
  counts its cancellations; ``cancellations`` answers once there were ``at_least``), ``bad schema`` (its input
  schema is not JSON Schema), ``odd.name/with spaces`` (a name providers refuse), and
  ``add`` (adds ``a`` and ``b``; listed again with ``add2`` after ``grow`` is called,
  which sends ``notifications/tools/list_changed``).
- ``parent``: ``fastmcp``, with a child process of its own (in its process group) that
  ignores the end of its input and sleeps: only ending the group ends it.
- ``hang``: reads initialize and never answers.
- ``exit``: exits at once with status 3 after a line on stderr.
- ``garbage``: answers initialize with lines that are not JSON-RPC, then nothing.
"""

# No ``from __future__ import annotations``: FastMCP reads the tools' annotations,
# which name the SDK's types imported inside ``fastmcp`` (the raw modes never load it).
import os
import sys
import time
from typing import Any


def fastmcp() -> None:
    import anyio
    from mcp.server.fastmcp import Context, FastMCP
    from mcp.types import ToolAnnotations

    server = FastMCP("odd", log_level="ERROR")

    @server.tool()
    def crash() -> str:
        """Dies in the middle of the call."""
        sys.stderr.write("odd: about to crash\n")
        sys.stderr.flush()
        os._exit(7)

    @server.tool()
    def flood() -> str:
        """Floods stderr, then answers."""
        line = "x" * 1023 + "\n"
        for _ in range(2048):
            sys.stderr.write(line)
        sys.stderr.write("odd: flood done\n")
        sys.stderr.flush()
        return "flooded"

    @server.tool()
    def big() -> str:
        """Answers 10 MB."""
        return ("0123456789" * 99 + "\n") * 10_600

    cancelled = [0]
    heard = anyio.Event()

    @server.tool()
    async def sleep(seconds: float) -> str:
        """Sleeps, and counts a cancellation."""
        nonlocal heard
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            cancelled[0] += 1
            heard.set()
            raise
        return "slept"

    @server.tool()
    async def cancellations(at_least: int) -> str:
        """Answers once ``sleep`` was cancelled at least ``at_least`` times."""
        nonlocal heard
        while cancelled[0] < at_least:
            await heard.wait()
            heard = anyio.Event()
        return str(cancelled[0])

    @server.tool(name="odd.name/with spaces")
    def odd_name() -> str:
        """A name with characters providers refuse."""
        return "odd name called"

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def add(a: int, b: int) -> str:
        """Adds two numbers (and says it only reads)."""
        return str(a + b)

    @server.tool()
    async def grow(ctx: Context[Any, Any, Any]) -> str:
        """Adds the tool add2 and says the list changed."""

        @server.tool()
        def add2(a: int, b: int) -> str:
            """Adds two numbers, too."""
            return str(a + b)

        await ctx.session.send_tool_list_changed()
        return "grown"

    @server.tool(name="bad schema")
    def bad() -> str:
        """Its schema is broken below."""
        return "never"

    server._tool_manager._tools["bad schema"].parameters = {"type": "object", "properties": 5}
    server.run("stdio")


def main() -> None:
    mode = sys.argv[1]
    if mode == "fastmcp":
        fastmcp()
    elif mode == "parent":
        import subprocess

        sleeper = "import time; time.sleep(3600)"
        subprocess.Popen([sys.executable, "-c", sleeper], stdin=subprocess.DEVNULL)
        fastmcp()
    elif mode == "hang":
        sys.stdin.readline()
        time.sleep(3600)
    elif mode == "exit":
        sys.stderr.write("odd: cannot start, no config\n")
        sys.exit(3)
    elif mode == "garbage":
        sys.stdin.readline()
        sys.stdout.write("Welcome to odd server v1!\n{not json\n")
        sys.stdout.flush()
        time.sleep(3600)
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
