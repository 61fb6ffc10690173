"""Images over ACP with the official SDK's client: the agent advertises
``promptCapabilities.image``, an image content block reaches the model in its API's
shape, a model without images gets a placeholder and the user a note, a bad image is
refused by name, a loaded session shows its images (stored ones loaded from beside the
session), a tool's images show on its call, live and loaded, and an image sent during a
turn goes with its queued follow-up."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import acp
import pytest
from acp import schema

from tests.support.images import b64, png
from tests.support.model_server import ModelServer

from .helpers import RecordingClient, crank_acp

PNG = png(3, 3)


def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir(exist_ok=True)
    return folder


async def test_an_image_prompt_reaches_the_model(tmp_path: Path) -> None:
    folder = project(tmp_path)
    client = RecordingClient()
    answers: list[Any] = []
    async with (
        ModelServer({"replies": [{"text": "A small square."}]}) as model,
        crank_acp(model, tmp_path, client, model_id="gpt-4o", answers=answers) as conn,
    ):
        assert answers[0].agent_capabilities.prompt_capabilities.image is True
        session = await conn.new_session(cwd=str(folder))
        prompt = [
            acp.text_block("what is this?"),
            acp.image_block(b64(PNG), "image/png", uri="file:///tmp/square.png"),
        ]
        answer = await conn.prompt(session_id=session.session_id, prompt=prompt)
        assert answer.stop_reason == "end_turn"
        assert client.text() == "A small square."
    content = model.requests[0]["body"]["messages"][-1]["content"]
    assert content[0] == {"type": "text", "text": "what is this?"}
    assert content[1] == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{b64(PNG)}"},
    }


async def test_a_model_without_images_gets_a_placeholder_and_the_user_a_note(
    tmp_path: Path,
) -> None:
    folder = project(tmp_path)
    client = RecordingClient()
    async with (
        ModelServer({"replies": [{"text": "I cannot see."}]}) as model,
        crank_acp(model, tmp_path, client) as conn,
    ):
        session = await conn.new_session(cwd=str(folder))
        prompt = [acp.text_block("look"), acp.image_block(b64(PNG), "image/png")]
        await conn.prompt(session_id=session.session_id, prompt=prompt)
        assert "does not accept images" in client.text()
    sent = json.dumps(model.requests[0]["body"])
    assert "image_url" not in sent
    assert "[image omitted: the model does not accept images: image/png, 3x3" in sent


@pytest.mark.parametrize(
    ("data", "mime", "problem"),
    [
        ("%%%", "image/png", "prompt[1].data: not valid base64"),
        (b64(PNG), "image/svg+xml", "unsupported image type 'image/svg+xml'"),
    ],
)
async def test_a_bad_image_block_is_refused_by_name(
    tmp_path: Path, data: str, mime: str, problem: str
) -> None:
    folder = project(tmp_path)
    client = RecordingClient()
    async with (
        ModelServer({"replies": [{"text": "fine"}]}) as model,
        crank_acp(model, tmp_path, client) as conn,
    ):
        session = await conn.new_session(cwd=str(folder))
        with pytest.raises(acp.RequestError) as caught:
            prompt = [acp.text_block("x"), acp.image_block(data, mime)]
            await conn.prompt(session_id=session.session_id, prompt=prompt)
        assert caught.value.code == -32602 and problem in str(caught.value)
        assert model.requests == []


async def test_load_shows_a_small_image_and_a_stored_one(tmp_path: Path) -> None:
    folder = project(tmp_path)
    big = png(100, 100, noise=True)
    script = {"replies": [{"text": "Two pictures."}, {"text": "Still two."}]}
    first = RecordingClient()
    async with ModelServer(script) as model:
        async with crank_acp(model, tmp_path, first, model_id="gpt-4o") as conn:
            session = await conn.new_session(cwd=str(folder))
            prompt = [
                acp.text_block("compare"),
                acp.image_block(b64(PNG), "image/png", uri="file:///x/small.png"),
                acp.image_block(b64(big), "image/png", uri="file:///x/big.png"),
            ]
            await conn.prompt(session_id=session.session_id, prompt=prompt)
        client = RecordingClient()
        async with crank_acp(model, tmp_path, client, model_id="gpt-4o") as conn:
            await conn.load_session(cwd=str(folder), session_id=session.session_id)
            chunks = [u.content for u in client.of("user_message_chunk")]
            assert chunks[0].text == "compare"
            assert chunks[1].type == "image" and chunks[1].data == b64(PNG)
            assert chunks[2].type == "image" and chunks[2].data == b64(big)
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("again")])
    urls = [
        part["image_url"]["url"]
        for message in model.requests[-1]["body"]["messages"]
        if isinstance(message.get("content"), list)
        for part in message["content"]
        if part["type"] == "image_url"
    ]
    assert urls == [f"data:image/png;base64,{b64(PNG)}", f"data:image/png;base64,{b64(big)}"]


def images_on(client: RecordingClient, call_id: str) -> list[Any]:
    """The image content of the newest update of ``call_id`` that has any content."""
    updates = [
        u
        for _, u in client.updates
        if u.session_update in ("tool_call", "tool_call_update")
        and u.tool_call_id == call_id
        and u.content
    ]
    assert updates, f"no update of {call_id} with content"
    return [c.content for c in updates[-1].content if getattr(c.content, "type", "") == "image"]


def drop_blobs(root: Path) -> int:
    """Delete every stored image under ``root``; how many there were."""
    blobs = [blob for folder in root.rglob("*.blobs") for blob in folder.iterdir()]
    for blob in blobs:
        blob.unlink()
    return len(blobs)


async def test_a_tools_image_shows_on_its_call_live_and_after_load(tmp_path: Path) -> None:
    """A read of a PNG returns the image: the call's content carries it while the turn
    runs and again when the session is loaded (stored beside the session, over 8 KB);
    a blob that went missing is shown by name."""
    folder = project(tmp_path)
    big = png(100, 100, noise=True)
    (folder / "shot.png").write_bytes(big)
    script = {
        "replies": [
            {"toolCalls": [{"id": "r1", "name": "read", "arguments": {"path": "shot.png"}}]},
            {"text": "A noisy square."},
        ]
    }
    live = RecordingClient()
    async with ModelServer(script) as model:
        async with crank_acp(model, tmp_path, live, model_id="gpt-4o") as conn:
            session = await conn.new_session(cwd=str(folder))
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("look")])
        [shown] = images_on(live, "r1")
        assert shown.mime_type == "image/png" and shown.data == b64(big)
        loaded = RecordingClient()
        async with crank_acp(model, tmp_path, loaded, model_id="gpt-4o") as conn:
            await conn.load_session(cwd=str(folder), session_id=session.session_id)
        [again] = images_on(loaded, "r1")
        assert again.data == b64(big)
        assert drop_blobs(tmp_path) == 1
        gone = RecordingClient()
        async with crank_acp(model, tmp_path, gone, model_id="gpt-4o") as conn:
            await conn.load_session(cwd=str(folder), session_id=session.session_id)
        assert images_on(gone, "r1") == []
        texts = [
            c.content.text
            for _, u in gone.updates
            if u.session_update == "tool_call_update" and u.tool_call_id == "r1"
            for c in u.content or []
            if getattr(c.content, "type", "") == "text"
        ]
        assert "[image: shot.png]" in texts


class HeldClient(RecordingClient):
    """Answers the permission question "allow", but only once the test releases it,
    so the turn is surely running meanwhile."""

    def __init__(self) -> None:
        super().__init__(["allow"])
        self.release = asyncio.Event()

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> schema.RequestPermissionResponse:
        self.asked.set()
        await self.release.wait()
        return await super().request_permission(session_id, tool_call, options, **kwargs)


async def test_an_image_sent_during_a_turn_is_queued_with_its_follow_up(tmp_path: Path) -> None:
    folder = project(tmp_path)
    write = {"id": "w1", "name": "write", "arguments": {"path": "a.txt", "content": "A"}}
    script = {"replies": [{"toolCalls": [write]}, {"text": "written"}, {"text": "seen"}]}
    client = HeldClient()
    async with ModelServer(script) as model, crank_acp(model, tmp_path, client) as conn:
        session = await conn.new_session(cwd=str(folder))
        first = asyncio.ensure_future(
            conn.prompt(session_id=session.session_id, prompt=[acp.text_block("one")])
        )
        await asyncio.wait_for(client.asked.wait(), 60)
        prompt = [acp.text_block("two"), acp.image_block(b64(PNG), "image/png")]
        second = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=prompt))
        # The turn is still held: the note is the queued follow-up's answer (it used to
        # be refused with 1001).
        await client.wait_for(lambda: "does not accept images" in client.text(), "the note")
        assert len(model.requests) == 1
        client.release.set()
        assert (await first).stop_reason == "end_turn"
        assert (await second).stop_reason == "end_turn"
    last = json.dumps(model.requests[-1]["body"]["messages"])
    assert "two" in last
    assert "[image omitted: the model does not accept images: image/png, 3x3" in last
