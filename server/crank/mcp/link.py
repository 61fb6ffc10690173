"""One live connection to one server, through the official SDK's ``ClientSession``.

This is the only module that imports the SDK (pydantic and all): ``connection``
loads it in a worker thread, so nothing on an editor's path to an answer pays for it.
``open_link`` opens the transport (``stdio`` for a local server; the SDK's streamable
HTTP or SSE client for a remote one), initialises, and yields a ``Link`` that lists
tools and prompts and makes calls with a timeout; an aborted or timed-out call sends
``notifications/cancelled`` for its request id.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.session import RequestResponder

from crank import __version__
from crank.agent.tools import ToolError, ToolOutput
from mcp import ClientSession, McpError, types

from .config import ServerConfig
from .remote import RemotePrompt, RemoteTool, StderrTail
from .results import to_output
from .stdio import StdioProcess, stdio_streams

ListChanged = Callable[[], None]


class Link:
    """A connected, initialised server. ``ended`` is set when its process exits."""

    def __init__(
        self,
        config: ServerConfig,
        session: ClientSession,
        process: StdioProcess | None,
        instructions: str | None,
    ) -> None:
        self.config = config
        self.session = session
        self.process = process
        self.instructions = instructions
        self._pending: set[asyncio.Task[None]] = set()

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    async def ended(self) -> None:
        """Returns when the server's process has exited (never, for a remote server)."""
        if self.process is None:
            await asyncio.Event().wait()
        else:
            await self.process.wait()

    async def list_tools(self) -> list[RemoteTool]:
        tools: list[RemoteTool] = []
        cursor: str | None = None
        while True:
            page = await self._request(
                types.ListToolsRequest(
                    params=types.PaginatedRequestParams(cursor=cursor) if cursor else None
                ),
                types.ListToolsResult,
                self.config.timeout_s,
            )
            for tool in page.tools:
                hints = tool.annotations
                tools.append(
                    RemoteTool(
                        name=tool.name,
                        description=tool.description or tool.title or "",
                        input_schema=dict(tool.inputSchema),
                        read_only=bool(hints is not None and hints.readOnlyHint),
                    )
                )
            cursor = page.nextCursor
            if not cursor:
                return tools

    async def list_prompts(self) -> list[RemotePrompt]:
        caps = self.session.get_server_capabilities()
        if caps is None or caps.prompts is None:
            return []
        page = await self._request(
            types.ListPromptsRequest(), types.ListPromptsResult, self.config.timeout_s
        )
        return [
            RemotePrompt(
                name=prompt.name,
                description=prompt.description or "",
                arguments=tuple(a.name for a in prompt.arguments or ()),
                required=tuple(a.name for a in prompt.arguments or () if a.required),
            )
            for prompt in page.prompts
        ]

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> str:
        """The prompt's messages as one text (what the user's slash command sends)."""
        result = await self._request(
            types.GetPromptRequest(
                params=types.GetPromptRequestParams(name=name, arguments=arguments)
            ),
            types.GetPromptResult,
            self.config.timeout_s,
        )
        parts: list[str] = []
        for message in result.messages:
            content = message.content
            if isinstance(content, types.TextContent):
                parts.append(content.text)
            elif isinstance(content, types.EmbeddedResource) and isinstance(
                content.resource, types.TextResourceContents
            ):
                parts.append(content.resource.text)
        return "\n\n".join(parts)

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        """``tools/call`` with the server's timeout; the result as Crank's ToolOutput."""
        result = await self._request(
            types.CallToolRequest(
                params=types.CallToolRequestParams(name=name, arguments=arguments)
            ),
            types.CallToolResult,
            self.config.timeout_s,
        )
        return to_output(result, self.config.name)

    async def _request(self, request: Any, result_type: type[Any], limit_s: float) -> Any:
        session = self.session
        request_id = session._request_id  # the id send_request is about to take
        what = f"MCP server {self.config.name!r}"
        try:
            async with asyncio.timeout(limit_s):
                return await session.send_request(types.ClientRequest(request), result_type)
        except TimeoutError:
            self._cancel(request_id, "timed out")
            raise ToolError(
                f"{what} did not answer within {limit_s:g} s (its timeoutMs); the request "
                "was cancelled"
            ) from None
        except asyncio.CancelledError:
            self._cancel(request_id, "aborted by the user")
            raise
        except McpError as exc:
            if exc.error.code == types.CONNECTION_CLOSED:
                raise ToolError(
                    f"{what} closed the connection before it answered (it exited or "
                    "crashed; the state and log say why)"
                ) from None
            raise ToolError(f"{what} answered with an error: {exc.error.message}") from None

    def _cancel(self, request_id: int, reason: str) -> None:
        """Send ``notifications/cancelled`` from a task of its own: the caller may be
        in the middle of being cancelled."""

        async def send() -> None:
            note = types.CancelledNotification(
                params=types.CancelledNotificationParams(requestId=request_id, reason=reason)
            )
            try:
                await self.session.send_notification(types.ClientNotification(note))
            except Exception:  # the server may be gone already: nothing to tell it
                return

        task = asyncio.get_running_loop().create_task(send())
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)


class Refused(ConnectionError):
    """The server answered 401/403: trying again with the same headers would not help."""


def _http_client(config: ServerConfig, refused: list[int]) -> httpx.AsyncClient:
    async def hook(response: httpx.Response) -> None:
        if response.status_code in (401, 403):
            refused.append(response.status_code)

    return httpx.AsyncClient(
        headers=dict(config.headers),
        timeout=httpx.Timeout(30, read=300),
        follow_redirects=False,
        event_hooks={"response": [hook]},
    )


def refusal(config: ServerConfig, status: int) -> str:
    """The clear error for a 401/403: Crank has no OAuth flow (yet)."""
    return (
        f"MCP server {config.name!r} at {config.url} answered {status} "
        f"{'Unauthorized' if status == 401 else 'Forbidden'}: give it credentials in "
        'its "headers" (for example "Authorization": "Bearer ..."); Crank does not '
        "run OAuth sign-in"
    )


@asynccontextmanager
async def open_link(
    config: ServerConfig,
    root: Path,
    tail: StderrTail,
    on_list_changed: ListChanged,
    started: Callable[[int], None] | None = None,
    init_timeout: float = 30.0,
) -> AsyncIterator[Link]:
    """Connect and initialise (bounded by ``init_timeout``), then yield the Link; on
    exit the session closes and a local server's whole process group ends."""

    async def handler(
        message: RequestResponder[types.ServerRequest, types.ClientResult]
        | types.ServerNotification
        | Exception,
    ) -> None:
        if isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.ToolListChangedNotification
        ):
            on_list_changed()

    refused: list[int] = []
    try:
        async with _connected(config, root, tail, handler, refused, started, init_timeout) as link:
            yield link
    except Exception:
        if refused:  # however the SDK's transport reported it (an HTTPStatusError group)
            raise Refused(refusal(config, refused[-1])) from None
        raise


@asynccontextmanager
async def _connected(
    config: ServerConfig,
    root: Path,
    tail: StderrTail,
    handler: Any,
    refused: list[int],
    started: Callable[[int], None] | None,
    init_timeout: float,
) -> AsyncIterator[Link]:
    async with AsyncExitStack() as stack:
        process: StdioProcess | None = None
        if config.transport == "stdio":
            read, write, stdio = await stack.enter_async_context(stdio_streams(config, root, tail))
            process = stdio
            if started is not None:
                started(stdio.pid)
        elif config.transport == "http":
            client = await stack.enter_async_context(_http_client(config, refused))
            read, write, _session_id = await stack.enter_async_context(
                streamable_http_client(config.url, http_client=client)
            )
        else:
            read, write = await stack.enter_async_context(
                sse_client(config.url, headers=dict(config.headers))
            )
        session = await stack.enter_async_context(
            ClientSession(
                read,
                write,
                read_timeout_seconds=timedelta(seconds=max(config.timeout_s, init_timeout)),
                message_handler=handler,
                client_info=types.Implementation(name="crank", version=__version__),
            )
        )
        try:
            async with asyncio.timeout(init_timeout):
                result = await session.initialize()
        except TimeoutError:
            if refused:
                raise ConnectionError(refusal(config, refused[-1])) from None
            raise ConnectionError(
                f"MCP server {config.name!r} did not answer initialize within {init_timeout:g} s"
            ) from None
        except McpError as exc:
            if refused:
                raise ConnectionError(refusal(config, refused[-1])) from None
            raise ConnectionError(
                f"MCP server {config.name!r} refused initialize: {exc.error.message}"
            ) from None
        except Exception:
            if refused:
                raise ConnectionError(refusal(config, refused[-1])) from None
            raise
        yield Link(config, session, process, result.instructions)
