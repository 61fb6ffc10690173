"""The sessions stored for a folder, without a host open on it.

A frontend that lists sessions before it opens one (ACP's ``session/list``: a client
offers "resume" for a folder it has no session in yet) reads the same index as
``crank/sessions`` does, from the folder and the settings' ``sessionDir``. Listing
takes no lock and writes nothing.
"""

from __future__ import annotations

from pathlib import Path

import anyio.to_thread

from crank.session import SessionInfo, SessionStore

from .settings import Settings


async def folder_sessions(root: Path, settings: Settings) -> list[SessionInfo]:
    """The sessions of ``root``, newest first (``SessionStore.list``)."""
    store = SessionStore(root, settings.session_dir)
    return await anyio.to_thread.run_sync(store.list)
