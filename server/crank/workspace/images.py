"""``crank/image``: the bytes of an image a session's message refers to by hash.

A replayed message keeps only a reference (``sha256``) to an image stored beside the
session (``crank.session.blobs``), so a client that shows it after a reload asks for
it here. What is promised:

- the hash is checked first (64 lowercase hex digits, else ``invalid_params``), and it
  is the only thing taken from the client: the file read is built from it and the
  image type of the message naming it, inside this session's own blob folder;
- only a hash some message of this session's log (any branch) carries is served; one
  no message names, or whose blob is missing, unreadable or not matching the hash, is
  ``no_such_image``, the message saying which;
- it only reads: it never changes the session, so it is allowed while a run is active.

A frontend that replays a whole transcript with its pictures (ACP's ``session/load``)
takes ``with_stored_images`` instead: the blocks come from the session's own
transcript, so there is no hash to check against the log, and each blob is read once.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio.to_thread

from crank.agent.images import sniff_mime
from crank.session import SessionLog
from crank.session.blobs import is_hash, kept_message, read_blob, referenced

from .errors import NoSuchImage, invalid_params
from .stream import EventParams

log = logging.getLogger(__name__)
SHOWN_CHARS = 80
"""How much of a bad hash the refusal quotes."""


def as_replayed(params: EventParams) -> EventParams:
    """The envelope with a ``message_end``'s message as the session keeps it, so a live
    message shows its images exactly as a replay of it will (a large one by its
    ``sha256``, fetched with ``crank/image``: "stored" from the start, not only after a
    reload). Only ``message_end``: it is sent after its entry and blobs are on disk, so
    the image can already be fetched. Other envelopes are returned as they are."""
    event = params["event"]
    if event["type"] != "message_end":
        return params
    kept = kept_message(event["message"])
    if kept is event["message"]:
        return params
    return {**params, "event": {**event, "message": kept}}


def check_hash(value: object) -> str:
    """The hash, or ``invalid_params`` quoting (the start of) what was sent."""
    if isinstance(value, str) and is_hash(value):
        return value
    shown = value if isinstance(value, str) else json.dumps(value)
    raise invalid_params("sha256", f"expected 64 lowercase hex digits, got '{shown[:SHOWN_CHARS]}'")


def _serve(log: SessionLog | None, session_id: str, sha256: str) -> dict[str, Any]:
    def missing(why: str) -> NoSuchImage:
        return NoSuchImage(f"no image {sha256[:12]}… in session {session_id}: {why}")

    # the entries as a snapshot: runs append
    block = None if log is None else referenced(log.path, list(log.tree.entries), sha256)
    if log is None or block is None:
        raise missing("no message of this session refers to it")
    raw = read_blob(log.blobs, block)  # a block with a hash has no inline data
    if isinstance(raw, str):
        raise missing(raw)
    mime = block.get("mimeType") or sniff_mime(raw) or "application/octet-stream"
    return {"mimeType": mime, "data": base64.b64encode(raw).decode("ascii"), "bytes": len(raw)}


async def image_json(log: SessionLog | None, session_id: str, sha256: object) -> dict[str, Any]:
    """The ``crank/image`` result ``{mimeType, data, bytes}`` for the session whose log
    is ``log`` (None while it is still empty); the file is read off the event loop."""
    checked = check_hash(sha256)
    return await anyio.to_thread.run_sync(_serve, log, session_id, checked)


def _with_data(blobs: Path, message: dict[str, Any]) -> dict[str, Any]:
    images = message.get("images") or []
    if not any("sha256" in image and "data" not in image for image in images):
        return message
    loaded = []
    for image in images:
        if "sha256" in image and "data" not in image:
            raw = read_blob(blobs, image)
            if isinstance(raw, str):
                log.warning("a stored image (%s) is shown by name: %s", image.get("name"), raw)
            else:
                image = {**image, "data": base64.b64encode(raw).decode("ascii")}
        loaded.append(image)
    return {**message, "images": loaded}


async def with_stored_images(
    session_log: SessionLog | None, messages: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The messages with their stored images' bytes filled in (copies: the transcript's
    own messages keep their references); an image whose blob cannot be had stays a
    reference, and the log says why. Read off the event loop."""
    if session_log is None:
        return list(messages)
    blobs = session_log.blobs
    return await anyio.to_thread.run_sync(lambda: [_with_data(blobs, m) for m in messages])
