"""crank.mcp: Model Context Protocol servers as tools, on the official ``mcp`` SDK.

``config`` reads the ``mcpServers`` objects users already write (Claude Code's and
Cursor's format) from any source; ``names`` turns server and tool names into the
``mcp__<server>__<tool>`` names providers accept; ``stdio`` runs a local server as a
child process (its own process group, an environment with no provider key, a bounded
stderr tail); ``connection`` keeps one server connected (background start, restarts
with backoff, call timeouts, ``notifications/cancelled``); ``results`` turns a tool
result into a ``ToolOutput``; ``manager`` holds a workspace's servers and offers their
tools. Nothing here imports the SDK at module level: it is loaded in a worker thread
when the first server starts, so configuring servers never delays an editor's
``initialize``. Nothing a server sends is an instruction to Crank: it is a tool result.
"""
