"""Steers and follow-ups mean what a prompt means, through the real server over stdio
and the loopback model server: ``/skill:`` and template commands queued with
``crank/steer``, ``crank/followUp`` and ``crank/prompt`` ``whileRunning`` are expanded
(the transcript keeps what was typed), their images go with them and are stored like
a prompt's, their context is not dropped, a built-in is refused because it cannot be
queued, and an unknown command is 1008. The run is held on a permission question so
it is surely active while the queue requests arrive."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.support.images import b64, png
from tests.support.model_server import ModelServer

from .helpers import WRITE_A, Crank, HeldPermission, provider_for, read_text, running_server
from .test_commands import workspace_with_skills
from .test_runs import started

BIG = png(100, 100, noise=True)
SMALL = png(4, 3)


def image(data: bytes, name: str) -> dict[str, Any]:
    return {"mimeType": "image/png", "data": b64(data), "name": name}


async def refused(crank: Crank, method: str, params: dict[str, Any]) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as refusal:
        await crank.request(method, params)
    return refusal.value


@asynccontextmanager
async def held_run(
    tmp_path: Path, root: Path, replies: list[dict[str, Any]]
) -> AsyncIterator[tuple[ModelServer, Crank, HeldPermission, str]]:
    """A trusted workspace whose run "start" is under way, waiting on the permission
    question of its first reply (``WRITE_A``) until the test releases it."""
    held = HeldPermission()
    async with ModelServer({"replies": replies}) as model:
        opts = {
            "provider": {**provider_for(model.url), "images": True},
            "sessionDir": str(tmp_path / "sessions"),
            "trusted": True,
        }
        async with running_server(tmp_path, [root], opts) as crank:
            crank.answer_permission = held.answer
            run_id = await started(crank, "start")
            await held.asked()
            yield model, crank, held, run_id


def user_texts(request: dict[str, Any]) -> str:
    return json.dumps([m for m in request["body"]["messages"] if m["role"] == "user"])


async def test_queued_commands_expand_keep_what_was_typed_and_carry_images(
    tmp_path: Path,
) -> None:
    root = workspace_with_skills(tmp_path)
    prompts = root / ".crank" / "prompts"
    prompts.mkdir()
    (prompts / "fix-tests.md").write_text("Fix the failing test number $1 and rerun it.\n")
    (root / "notes.txt").write_text("the flaky one is in test_io\n")
    replies = [
        WRITE_A,
        {"text": "steered"},
        {"text": "followed"},
    ]
    async with held_run(tmp_path, root, replies) as (model, crank, held, run_id):
        steered = await crank.request(
            "crank/steer", {"text": "/skill:review src/", "images": [image(BIG, "big.png")]}
        )
        assert steered == {"steering": ["/skill:review src/"], "followUp": []}
        queued = await crank.request(
            "crank/prompt",
            {
                "text": "/fix-tests 7",
                "whileRunning": "steer",
                "context": [{"uri": (root / "notes.txt").as_uri()}],
                "images": [image(SMALL, "small.png")],
            },
        )
        assert queued == {"sessionId": queued["sessionId"], "queued": "steer"}
        followed = await crank.request(
            "crank/followUp", {"text": "/fix-tests 12", "images": [image(SMALL, "f.png")]}
        )
        assert followed == {
            "steering": ["/skill:review src/", "/fix-tests 7"],
            "followUp": ["/fix-tests 12"],
        }
        plain = await crank.request("crank/followUp", {"text": "//skill:review is a path"})
        assert plain["followUp"] == ["/fix-tests 12", "/skill:review is a path"]

        for method, text in (("crank/steer", "/compact"), ("crank/followUp", "/model x/y")):
            error = await refused(crank, method, {"text": text})
            assert error.code == 1006, error
            assert f"{text.split()[0]} cannot be queued as a steer or follow-up" in error.message
        unknown = await refused(crank, "crank/steer", {"text": "/reveiw"})
        assert unknown.code == 1008 and "unknown command /reveiw" in unknown.message
        bad = await refused(
            crank, "crank/steer", {"text": "x", "images": [{"mimeType": "image/png"}]}
        )
        assert bad.code == -32602 and "images[0].data" in bad.message
        state = await crank.request("crank/state", {})
        assert state["queue"]["steering"] == ["/skill:review src/", "/fix-tests 7"]

        held.release()
        await crank.settled(run_id)
        messages = (await crank.request("crank/messages", {}))["messages"]
        idle = await refused(crank, "crank/steer", {"text": "/new"})
        assert idle.code == -32602 and "/new cannot be queued" in idle.message
        session = Path((await crank.request("crank/state", {}))["sessionFile"])

    users = [m for m in messages if m["role"] == "user"]
    assert [u.get("typed") for u in users] == [
        None,
        "/skill:review src/",
        "/fix-tests 7",
        "/fix-tests 12",
        None,
    ]
    skill, template, follow, escaped = users[1:]
    assert skill["content"].startswith('<skill name="review"') and skill["content"].endswith(
        "</skill>\n\nsrc/"
    )
    assert template["content"].startswith("Fix the failing test number 7 and rerun it.")
    assert '<context path="notes.txt">\nthe flaky one is in test_io' in template["content"]
    assert follow["content"] == "Fix the failing test number 12 and rerun it."
    assert escaped["content"] == "/skill:review is a path" and "images" not in escaped
    assert [i["name"] for u in users[1:4] for i in u["images"]] == ["big.png", "small.png", "f.png"]
    # Stored like a prompt's: the large image is a reference to its blob, small ones inline.
    big_sha = hashlib.sha256(BIG).hexdigest()
    lines = [json.loads(line) for line in read_text(session).splitlines()]
    stored = [e["message"] for e in lines if e.get("type") == "message"]
    typed = {m.get("typed"): m for m in stored if m["role"] == "user"}
    assert typed["/skill:review src/"]["images"][0]["sha256"] == big_sha
    assert "data" not in typed["/skill:review src/"]["images"][0]
    assert typed["/fix-tests 7"]["images"][0]["data"] == b64(SMALL)
    assert (session.with_suffix(".blobs") / f"{big_sha}.png").read_bytes() == BIG
    assert b64(BIG) not in read_text(session)

    # What the model got: the expansions, with the images in the API's shape.
    second = user_texts(model.requests[1])
    assert "Read every changed file and list each bug with its line." in second
    assert "Fix the failing test number 7" in second and "test_io" in second
    assert f"data:image/png;base64,{b64(BIG)}" in second
    assert f"data:image/png;base64,{b64(SMALL)}" in second
    third = user_texts(model.requests[2])
    assert "Fix the failing test number 12" in third and "/skill:review is a path" in third
    big_url = next(
        block["image_url"]["url"]
        for m in model.requests[1]["body"]["messages"]
        if m["role"] == "user" and isinstance(m["content"], list)
        for block in m["content"]
        if block["type"] == "image_url" and b64(BIG) in block["image_url"]["url"]
    )
    assert base64.b64decode(big_url.split(",", 1)[1]) == BIG


async def test_clear_and_remove_hand_back_the_text_as_typed(tmp_path: Path) -> None:
    root = workspace_with_skills(tmp_path)
    replies = [
        WRITE_A,
        {"text": "done"},
    ]
    async with held_run(tmp_path, root, replies) as (model, crank, held, run_id):
        await crank.request("crank/steer", {"text": "/skill:review a"})
        await crank.request("crank/steer", {"text": "/skill:review b"})
        removed = await crank.request(
            "crank/removeQueued", {"queue": "steering", "index": 0, "text": "/skill:review a"}
        )
        assert removed["removed"] == "/skill:review a"
        assert removed["steering"] == ["/skill:review b"]
        cleared = await crank.request("crank/clearQueue", {})
        assert cleared == {"steering": ["/skill:review b"], "followUp": []}
        held.release()
        await crank.settled(run_id)
    assert "Read every changed file" not in json.dumps(model.requests[-1]["body"])


async def test_a_steer_with_images_for_a_model_without_them_says_so(tmp_path: Path) -> None:
    root = workspace_with_skills(tmp_path)
    async with ModelServer({"replies": [{"text": "no eyes"}]}) as model:
        opts = {"provider": provider_for(model.url), "sessionDir": str(tmp_path / "s")}
        async with running_server(tmp_path, [root], opts) as crank:
            answer = await crank.request(
                "crank/steer", {"text": "see", "images": [image(SMALL, "s.png")]}
            )
            assert answer["steering"] == ["see"]
            assert "does not accept images" in answer["imagesOmitted"]
            assert "1 image(s)" in answer["imagesOmitted"]
            plain = await crank.request("crank/followUp", {"text": "no picture"})
            assert "imagesOmitted" not in plain
            assert (await crank.request("crank/clearQueue", {}))["steering"] == ["see"]
