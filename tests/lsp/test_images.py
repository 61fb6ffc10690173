"""Images through the real server over stdio, to the loopback model server: the
request body carries the image in each API's shape, a ``read`` of a PNG reaches the
model as an image, a model without images gets placeholders and the answer says so,
and bad images are refused by name."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.images import b64, png
from tests.support.model_server import ModelServer

from .helpers import provider_for, running_server
from .test_runs import kinds, project

PNG = png(5, 4)


def options(model: ModelServer, tmp_path: Path, **provider: Any) -> dict[str, Any]:
    return {
        "provider": {**provider_for(model.url), **provider},
        "sessionDir": str(tmp_path / "sessions"),
    }


async def test_an_openai_request_carries_the_prompt_image(tmp_path: Path) -> None:
    async with ModelServer({"replies": [{"text": "a tiny gradient"}]}) as model:
        opts = options(model, tmp_path, images=True)
        async with running_server(tmp_path, [project(tmp_path)], opts) as crank:
            image = {"mimeType": "image/png", "data": b64(PNG), "name": "shot.png"}
            answer = await crank.request("crank/prompt", {"text": "what is it?", "images": [image]})
            assert "imagesOmitted" not in answer
            events = await crank.settled(answer["runId"])
            user_end = next(
                e["event"]
                for e in events
                if e["event"]["type"] == "message_end" and e["event"]["message"]["role"] == "user"
            )
            assert user_end["message"]["images"][0]["name"] == "shot.png"
    body = model.requests[0]["body"]
    user = body["messages"][-1]
    assert user["content"][0] == {"type": "text", "text": "what is it?"}
    assert user["content"][1] == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{b64(PNG)}"},
    }


async def test_an_anthropic_request_carries_a_read_image_in_the_tool_result(
    tmp_path: Path,
) -> None:
    folder = project(tmp_path)
    (folder / "logo.png").write_bytes(PNG)
    replies = [
        {"toolCalls": [{"id": "r1", "name": "read", "arguments": {"path": "logo.png"}}]},
        {"text": "It is a logo."},
    ]
    async with ModelServer({"replies": replies}) as model:
        provider = {
            "api": "anthropic",
            "baseUrl": model.url,
            "model": "claude-sonnet-4-5",
            "apiKey": "x",
        }
        opts = {"provider": provider, "sessionDir": str(tmp_path / "sessions")}
        async with running_server(tmp_path, [folder], opts) as crank:
            answer = await crank.request("crank/prompt", {"text": "read logo.png"})
            await crank.settled(answer["runId"])
    second = model.requests[1]["body"]["messages"][-1]
    (result,) = second["content"]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "r1"
    assert result["content"][0]["text"].startswith("Image file logo.png (logo.png, image/png, 5x4")
    assert result["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": b64(PNG)},
    }


async def test_a_local_model_gets_placeholders_and_the_user_is_told(tmp_path: Path) -> None:
    picture = tmp_path / "diagram.png"
    picture.write_bytes(PNG)
    async with ModelServer({"replies": [{"text": "no eyes"}]}) as model:
        opts = options(model, tmp_path)
        async with running_server(tmp_path, [project(tmp_path)], opts) as crank:
            answer = await crank.request(
                "crank/prompt", {"text": "see this", "images": [{"path": str(picture)}]}
            )
            assert "does not accept images" in answer["imagesOmitted"]
            events = await crank.settled(answer["runId"])
            assert kinds(events).count("images_omitted") == 1
    sent = json.dumps(model.requests[0]["body"])
    assert "image_url" not in sent and b64(PNG) not in sent
    assert "[image omitted: the model does not accept images: diagram.png, image/png, 5x4" in sent


@pytest.mark.parametrize(
    ("image", "problem"),
    [
        ({"mimeType": "image/png", "data": "@@@"}, "images[0].data: not valid base64"),
        ({"mimeType": "image/tiff", "data": b64(PNG)}, "unsupported image type 'image/tiff'"),
        ({"mimeType": "image/jpeg", "data": b64(PNG)}, "the data is image/png, not image/jpeg"),
        ({"path": "relative.png"}, "images[0].path: must be an absolute file path"),
        ({"data": b64(PNG)}, "images[0].mimeType: is required"),
    ],
)
async def test_a_bad_image_is_refused_by_name(
    tmp_path: Path, image: dict[str, Any], problem: str
) -> None:
    async with ModelServer({"replies": []}) as model:
        opts = options(model, tmp_path)
        async with running_server(tmp_path, [project(tmp_path)], opts) as crank:
            try:
                await crank.request("crank/prompt", {"text": "x", "images": [image]})
            except Exception as exc:
                assert problem in str(exc), str(exc)
            else:
                raise AssertionError("a bad image must be refused")
            assert model.requests == []


async def test_a_large_image_is_a_blob_beside_the_session(tmp_path: Path) -> None:
    big = png(100, 100, noise=True)
    async with ModelServer({"replies": [{"text": "ok"}]}) as model:
        opts = options(model, tmp_path, images=True)
        async with running_server(tmp_path, [project(tmp_path)], opts) as crank:
            image = {"mimeType": "image/png", "data": b64(big)}
            answer = await crank.request("crank/prompt", {"text": "big", "images": [image]})
            await crank.settled(answer["runId"])
            state = await crank.request("crank/state", {})
    session = Path(state["sessionFile"])
    assert b64(big) not in session.read_text()  # noqa: ASYNC240 (after the server is gone)
    (blob,) = session.with_suffix(".blobs").iterdir()
    assert blob.read_bytes() == big
    url = model.requests[0]["body"]["messages"][-1]["content"][1]["image_url"]["url"]
    assert base64.b64decode(url.split(",", 1)[1]) == big


async def test_a_context_entry_that_is_an_image_goes_as_an_image(tmp_path: Path) -> None:
    folder = project(tmp_path)
    (folder / "ui.png").write_bytes(PNG)
    (folder / "notes.txt").write_text("plain notes\n")
    async with ModelServer({"replies": [{"text": "seen"}]}) as model:
        opts = options(model, tmp_path, images=True)
        async with running_server(tmp_path, [folder], opts) as crank:
            context = [
                {"uri": (folder / "ui.png").as_uri()},
                {"uri": (folder / "notes.txt").as_uri()},
            ]
            answer = await crank.request(
                "crank/prompt", {"text": "fix the layout", "context": context}
            )
            await crank.settled(answer["runId"])
    user = model.requests[0]["body"]["messages"][-1]
    assert '<context path="notes.txt">\nplain notes' in user["content"][0]["text"]
    assert "ui.png" not in user["content"][0]["text"]
    assert user["content"][1]["image_url"]["url"] == f"data:image/png;base64,{b64(PNG)}"


async def test_a_tools_large_image_is_shown_live_as_a_replay_shows_it(tmp_path: Path) -> None:
    """Issue 34.7: live events carried a tool's large image inline while a replay carries
    its reference, so "stored" showed only after a reload. The tool result's
    ``message_end`` now carries the message as the session keeps it (after its blob is
    on disk): the same block ``crank/messages`` gives, fetched with ``crank/image``."""
    folder = project(tmp_path)
    big = png(100, 100, noise=True)
    (folder / "shot.png").write_bytes(big)
    replies = [
        {"toolCalls": [{"id": "r1", "name": "read", "arguments": {"path": "shot.png"}}]},
        {"text": "A picture."},
    ]
    async with ModelServer({"replies": replies}) as model:
        opts = options(model, tmp_path, images=True)
        async with running_server(tmp_path, [folder], opts) as crank:
            answer = await crank.request("crank/prompt", {"text": "look"})
            await crank.settled(answer["runId"])
            live = [
                e["event"]["message"]
                for e in crank.events
                if e["event"]["type"] == "message_end"
                and e["event"]["message"]["role"] == "toolResult"
            ]
            session = Path((await crank.request("crank/state", {}))["sessionFile"])
            (image,) = live[0]["images"]
            fetched = await crank.request("crank/image", {"sha256": image.get("sha256")})
    assert "data" not in image and image["bytes"] == len(big)
    entries = [json.loads(line) for line in session.read_text().splitlines()]  # noqa: ASYNC240
    (kept,) = [
        e["message"]
        for e in entries
        if e.get("type") == "message" and e["message"]["role"] == "toolResult"
    ]
    assert kept["images"] == live[0]["images"]  # what a reload replays
    assert base64.b64decode(fetched["data"]) == big
    # The model was still sent the bytes.
    sent = json.dumps(model.requests[1]["body"])
    assert b64(big) in sent
