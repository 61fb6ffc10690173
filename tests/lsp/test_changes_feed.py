"""The change feed a workspace's command snapshots use (crank.tools.feed), seen from
outside the real server: opened at the first recorded command, not before, and
released when the workspace folder is closed."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from crank.tools import feed
from tests.support.model_server import ModelServer

from .helpers import Crank, folder, running_server
from .test_changes import FOUR, by_path, project, run
from .test_one_truth import options

pytestmark = pytest.mark.skipif(not feed.available(), reason="inotify is Linux only")


def inotify_descriptors(crank: Crank) -> int:
    """How many inotify descriptors the server process holds (the prompt watcher's
    and the change feed's)."""
    pid = crank.client._server.pid  # type: ignore[attr-defined]
    fds = Path(f"/proc/{pid}/fd")
    count = 0
    for fd in fds.iterdir():
        try:
            count += os.readlink(fd) == "anon_inode:inotify"
        except OSError:
            continue  # closed while listed
    return count


async def test_the_feed_opens_with_the_first_command_and_closes_with_the_folder(
    tmp_path: Path,
) -> None:
    project_folder = project(tmp_path)
    with ModelServer(FOUR) as model:
        async with running_server(tmp_path, [project_folder], options(model, tmp_path)) as crank:
            await crank.request("crank/changes", {})  # the workspace is up
            idle = inotify_descriptors(crank)
            run_id = await run(crank)
            files = by_path(await crank.request("crank/changes", {"runId": run_id}))
            statuses = sorted((path, item["status"]) for path, item in files.items())
            assert statuses == [
                ("a.py", "modified"),
                ("b.txt", "added"),
                ("c.txt", "deleted"),
                ("d.py", "modified"),
            ]
            assert inotify_descriptors(crank) == idle + 1  # the feed, opened lazily
            crank.client.workspace_did_change_workspace_folders(
                types.DidChangeWorkspaceFoldersParams(
                    event=types.WorkspaceFoldersChangeEvent(
                        added=[], removed=[folder(project_folder)]
                    )
                )
            )
            # The folder closes in the background of the notification: each round trip
            # gives it the time to (a bounded number of them, no sleeps).
            for _ in range(500):
                if inotify_descriptors(crank) == 0:
                    break
                with contextlib.suppress(JsonRpcException):
                    await crank.request("crank/changes", {"workspace": project_folder.as_uri()})
            assert inotify_descriptors(crank) == 0
