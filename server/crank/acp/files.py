"""The editor's files through ACP: ``fs/read_text_file`` and ``fs/write_text_file``.

Used when the client offers both capabilities (``clientCapabilities.fs``): the tools
then read a file's text from the client, which answers with its buffer (unsaved
changes included) or the disk, and every change to such a file goes back through the
client, which shows it and saves it. A client that offers only one of the two gets
neither: reading buffers Crank could not write back (or writing files whose text it
read elsewhere) would leave the model's copy and the editor's apart.

Promises:
- Only regular text files Crank would load whole are asked about (at most
  MAX_TEXT_BYTES on disk, no NUL byte in the first block); a missing file, a
  directory, a huge or binary file is read from disk as without a client, so the
  tools' own limits and messages hold. New files are created on disk.
- The whole text is asked for (no ``line``/``limit``): ``read`` windows it and ``edit``
  needs all of it, exactly as for a file on disk.
- A client error for a read (file not found, not permitted) falls back to the disk,
  whose own answer (or error) is what the model sees; the error is logged.
- Every question waits at most ``CLIENT_SECONDS``; a client that does not answer in
  time is a tool error naming the method. Cancelling the tool (``session/cancel``)
  withdraws the question: a late answer is dropped.
- A write the client refuses changed nothing (``EditRefused``, its message shown to
  the model); the caller checks the disk afterwards (``tools.change``).
- The paths are absolute and resolved, after the tools' own checks: the workspace
  bounds, the protected paths and the permission question all come first.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from crank.agent.tools import ToolError
from crank.tools import EditRefused
from crank.tools.textfile import MAX_TEXT_BYTES, SNIFF_BYTES, looks_binary, open_regular

from .wire import Peer, PeerGone, RpcError

log = logging.getLogger("crank.acp")

CLIENT_SECONDS = 30.0
"""How long a question to the client (a read, a write, a terminal call) may take."""


def offers_files(capabilities: dict[str, Any]) -> bool:
    fs = capabilities.get("fs")
    return (
        isinstance(fs, dict) and fs.get("readTextFile") is True and fs.get("writeTextFile") is True
    )


def worth_asking(path: Path) -> bool:
    """Is ``path`` a regular text file Crank would load whole (so the client's text of
    it is what a tool should see)? Never blocks on a FIFO."""
    try:
        with open_regular(path, str(path)) as (handle, info):
            if info.st_size > MAX_TEXT_BYTES:
                return False
            return not looks_binary(handle.read(SNIFF_BYTES))
    except (OSError, ToolError):
        return False


async def ask(peer: Peer, method: str, params: dict[str, Any]) -> Any:
    """One request to the client, answered within CLIENT_SECONDS or a ToolError."""
    try:
        return await asyncio.wait_for(peer.request(method, params), CLIENT_SECONDS)
    except TimeoutError:
        raise ToolError(
            f"The editor did not answer {method} within {CLIENT_SECONDS:g} seconds."
        ) from None


class AcpFiles:
    """``crank.tools.EditorFiles`` (and the write) over the client's ``fs/*``."""

    def __init__(self, peer: Peer, session_id: Callable[[], str]) -> None:
        self._peer = peer
        self._session_id = session_id

    async def read(self, path: Path) -> str | None:
        if not await asyncio.to_thread(worth_asking, path):
            return None
        params = {"sessionId": self._session_id(), "path": str(path)}
        try:
            answer = await ask(self._peer, "fs/read_text_file", params)
        except (RpcError, PeerGone) as exc:
            log.info("fs/read_text_file %s failed (%s); reading the disk", path, exc)
            return None
        content = answer.get("content") if isinstance(answer, dict) else None
        if not isinstance(content, str):
            raise ToolError(f"The editor's answer to fs/read_text_file for {path} had no text.")
        return content

    def paths(self) -> Iterable[Path]:
        return ()  # ACP does not say which files are open

    async def write(self, path: Path, old_text: str, new_text: str) -> str | None:
        """``crank.tools.ApplyEdit``: the whole new text to the client, which saves it."""
        params = {"sessionId": self._session_id(), "path": str(path), "content": new_text}
        try:
            await ask(self._peer, "fs/write_text_file", params)
        except ToolError:
            raise ToolError(
                f"The editor did not answer fs/write_text_file for {path} within "
                f"{CLIENT_SECONDS:g} seconds; the file may or may not have changed: read it "
                "again before changing it."
            ) from None
        except RpcError as exc:
            raise EditRefused(exc.message or f"error {exc.code}") from None
        except PeerGone as exc:
            raise EditRefused(f"the client closed the connection ({exc})") from None
        return None
