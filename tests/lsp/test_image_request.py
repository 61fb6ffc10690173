"""``crank/image`` through the real server over stdio: a session whose prompt image and
``read`` image went to blobs (over 8 KB), reopened by a fresh server, serves exactly
the stored bytes for a hash its messages name, and nothing else: a malformed hash is
-32602, a hash no message names or a blob that is missing, damaged or a link is 1009,
another session's images are not reachable, and it answers while a run is active."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.support.images import b64, png
from tests.support.model_server import ModelServer

from .helpers import WRITE_A, Crank, HeldPermission, read_text, running_server
from .test_images import options
from .test_runs import project, started

PROMPTED = png(100, 100, noise=True)
READ = png(90, 90, noise=True)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def refusal(crank: Crank, params: dict[str, Any]) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as refused:
        await crank.request("crank/image", params)
    return refused.value


async def served(crank: Crank, digest: str) -> bytes:
    answer = await crank.request("crank/image", {"sha256": digest})
    raw = base64.b64decode(answer["data"])
    assert answer["bytes"] == len(raw) and answer["mimeType"] == "image/png"
    return raw


async def a_session_with_two_blobs(tmp_path: Path, folder: Path) -> Path:
    """One run: a prompt with a large image, then a ``read`` of another; the session file."""
    (folder / "shot.png").write_bytes(READ)
    replies = [
        {"toolCalls": [{"id": "r1", "name": "read", "arguments": {"path": "shot.png"}}]},
        {"text": "two pictures"},
    ]
    async with ModelServer({"replies": replies}) as model:
        opts = options(model, tmp_path, images=True)
        async with running_server(tmp_path, [folder], opts) as crank:
            image = {"mimeType": "image/png", "data": b64(PROMPTED), "name": "noise.png"}
            answer = await crank.request("crank/prompt", {"text": "look", "images": [image]})
            await crank.settled(answer["runId"])
            state = await crank.request("crank/state", {})
    return Path(state["sessionFile"])


async def test_a_reopened_session_serves_its_blobs_and_nothing_else(tmp_path: Path) -> None:
    folder = project(tmp_path)
    session = await a_session_with_two_blobs(tmp_path, folder)
    blobs = session.with_suffix(".blobs")
    assert sorted(p.name for p in blobs.iterdir()) == sorted(
        [f"{sha(PROMPTED)}.png", f"{sha(READ)}.png"]
    )
    async with ModelServer({"replies": []}) as model:
        opts = options(model, tmp_path, images=True)
        async with running_server(tmp_path, [folder], opts) as crank:  # resumes the session
            messages = (await crank.request("crank/messages", {}))["messages"]
            refs = [image for m in messages for image in m.get("images", [])]
            assert [r.get("sha256") for r in refs] == [sha(PROMPTED), sha(READ)]
            assert all("data" not in r for r in refs)  # a reload sees references only
            assert await served(crank, sha(PROMPTED)) == PROMPTED
            assert await served(crank, sha(READ)) == READ
            state = await crank.request("crank/state", {})
            named = await crank.request(
                "crank/image", {"sessionId": state["sessionId"], "sha256": sha(READ)}
            )
            assert base64.b64decode(named["data"]) == READ

            for bad, shown in [
                ("../../../etc/passwd", "'../../../etc/passwd'"),
                (sha(READ).upper(), f"'{sha(READ).upper()}'"),
                (sha(READ) + "/../x", f"'{sha(READ)}/../x'"),
                ("a" * 200, "'" + "a" * 80 + "'"),
            ]:
                error = await refusal(crank, {"sha256": bad})
                assert error.code == -32602, (bad, error)
                assert f"sha256: expected 64 lowercase hex digits, got {shown}" in error.message
            # not a string at all: refused by the contract's type, before the handler
            for bad, said in [(7, "sha256: must be a string"), (None, "sha256: is required")]:
                error = await refusal(crank, {"sha256": bad})
                assert error.code == -32602 and said in error.message, (bad, error)

            nobody = await refusal(crank, {"sha256": sha(b"never stored")})
            assert nobody.code == 1009
            assert nobody.message == (
                f"no image {sha(b'never stored')[:12]}… in session {state['sessionId']}: "
                "no message of this session refers to it"
            )
            other = await refusal(crank, {"sessionId": "someone-else", "sha256": sha(READ)})
            assert other.code == 1002

            # Another session is never a way in: a new one names neither image.
            await crank.request("crank/newSession", {})
            elsewhere = await refusal(crank, {"sha256": sha(PROMPTED)})
            assert elsewhere.code == 1009 and "no message of this session" in elsewhere.message
            await crank.request("crank/openSession", {"sessionId": state["sessionId"]})

            # Missing, damaged, or a link out of the folder: 1009 saying which.
            (blobs / f"{sha(PROMPTED)}.png").unlink()
            missing = await refusal(crank, {"sha256": sha(PROMPTED)})
            assert missing.code == 1009 and missing.message.endswith(": the blob is missing")
            damaged = bytearray(READ)
            damaged[-20] ^= 0xFF
            (blobs / f"{sha(READ)}.png").write_bytes(bytes(damaged))
            broken = await refusal(crank, {"sha256": sha(READ)})
            assert broken.code == 1009 and "does not match its hash" in broken.message
            outside = tmp_path / "outside.png"
            outside.write_bytes(PROMPTED)  # the right bytes, but elsewhere
            (blobs / f"{sha(PROMPTED)}.png").symlink_to(outside)
            linked = await refusal(crank, {"sha256": sha(PROMPTED)})
            assert linked.code == 1009 and "cannot be read" in linked.message
            (blobs / f"{sha(PROMPTED)}.png").unlink()
            copy = tmp_path / "copy.blobs"
            blobs.rename(copy)  # the whole folder elsewhere, linked back: not followed either
            (copy / f"{sha(PROMPTED)}.png").write_bytes(PROMPTED)
            blobs.symlink_to(copy)
            folder_linked = await refusal(crank, {"sha256": sha(PROMPTED)})
            assert folder_linked.code == 1009
            assert "the blob folder cannot be read" in folder_linked.message


async def test_an_image_is_served_while_a_run_is_active(tmp_path: Path) -> None:
    folder = project(tmp_path)
    held = HeldPermission()
    replies = [{"text": "seen"}, WRITE_A, {"text": "written"}]
    async with ModelServer({"replies": replies}) as model:
        opts = options(model, tmp_path, images=True)
        async with running_server(tmp_path, [folder], opts) as crank:
            image = {"mimeType": "image/png", "data": b64(PROMPTED)}
            first = await crank.request("crank/prompt", {"text": "look", "images": [image]})
            await crank.settled(first["runId"])
            session = Path((await crank.request("crank/state", {}))["sessionFile"])
            crank.answer_permission = held.answer
            run_id = await started(crank, "write it")
            await held.asked()
            assert (await crank.request("crank/state", {}))["running"] is True
            before = read_text(session)
            assert await served(crank, sha(PROMPTED)) == PROMPTED
            assert await served(crank, sha(PROMPTED)) == PROMPTED
            assert read_text(session) == before  # it wrote nothing
            held.release()
            await crank.settled(run_id)
