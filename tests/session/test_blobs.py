"""Images in the session file: a large one is stored beside it as a content-addressed
blob, written and synced before the entry naming it, and the entry keeps a reference;
replay reads no blob bytes; the request loads them; a missing or damaged blob is a
placeholder, never a crash; a small image stays inline."""

from __future__ import annotations

import json
from pathlib import Path

from crank.agent.images import image_block, sha256_of
from crank.agent.messages import user_message
from crank.agent.scripted import say
from crank.session import SessionLog
from crank.session.blobs import INLINE_LIMIT, blob_dir
from tests.support.images import b64, png

from .context_helpers import Rig, rig

BIG = png(120, 120, noise=True)
SMALL = png(2, 2)


def restarted(tmp_path: Path, path: Path) -> Rig:
    """The session at ``path`` opened again, as after a restart."""
    return rig(
        tmp_path,
        session=path,
        window=200_000,
        replies=[say("ok")] * 5,
        system="S",
        tools=lambda _: [],
    )


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_large_image_goes_to_a_blob_and_the_entry_keeps_a_reference(tmp_path: Path) -> None:
    assert len(BIG) > INLINE_LIMIT >= len(SMALL)
    with SessionLog.create(tmp_path / "s", cwd=str(tmp_path)) as log:
        big, small = image_block(BIG, "big.png"), image_block(SMALL, "small.png")
        log.append_message_sync(user_message("two pictures", 1, images=[big, small]))
        path = log.path
    entry = _lines(path)[-1]
    stored, inline = entry["message"]["images"]  # type: ignore[index]
    assert "data" not in stored
    assert stored["sha256"] == sha256_of(BIG) and stored["bytes"] == len(BIG)
    assert stored["name"] == "big.png" and stored["mimeType"] == "image/png"
    assert inline["data"] == b64(SMALL) and "sha256" not in inline
    blob = blob_dir(path) / f"{sha256_of(BIG)}.png"
    assert blob.read_bytes() == BIG
    assert path.stat().st_size < len(BIG)  # the session file does not carry the image
    assert not [p for p in blob_dir(path).iterdir() if p.name.startswith(".")]


def test_the_same_image_twice_is_one_blob(tmp_path: Path) -> None:
    with SessionLog.create(tmp_path / "s", cwd=str(tmp_path)) as log:
        for n in range(2):
            log.append_message_sync(user_message(f"again {n}", 1, images=[image_block(BIG)]))
        assert len(list(log.blobs.iterdir())) == 1


async def test_replay_keeps_references_and_the_request_loads_the_bytes(tmp_path: Path) -> None:
    r = rig(tmp_path, window=200_000, replies=[say("a picture"), say("still")])
    await r.harness.prompt("look", [image_block(BIG, "big.png")]).wait()
    path = r.log.path
    r.log.close()
    reopened = SessionLog.open(path)
    replayed = reopened.replay()
    image = replayed[0]["images"][0]  # type: ignore[typeddict-item]
    assert "data" not in image and image["sha256"] == sha256_of(BIG)
    reopened.close()

    again = restarted(tmp_path, path)
    await again.harness.prompt("and again?").wait()
    sent = again.agent.requests[-1].messages[0]
    assert sent["role"] == "user"
    assert sent["images"][0]["data"] == b64(BIG)
    assert "sha256" not in sent["images"][0]
    assert again.harness.messages[0]["images"][0].get("data") is None  # the record is unchanged


async def test_a_missing_blob_on_resume_is_a_placeholder_and_said_once(tmp_path: Path) -> None:
    r = rig(tmp_path, window=200_000, replies=[say("seen")])
    await r.harness.prompt("look", [image_block(BIG, "big.png")]).wait()
    path = r.log.path
    r.log.close()
    for blob in blob_dir(path).iterdir():
        blob.unlink()
    again = restarted(tmp_path, path)
    await again.harness.prompt("what did it show?").wait()
    await again.harness.prompt("and now?").wait()
    first = again.agent.requests[0].messages[0]
    assert "images" not in first
    assert "[image omitted: its stored copy" in first["content"]
    assert "big.png, image/png, 120x120" in first["content"]
    told = [e for e in again.events if e["type"] == "images_omitted"]
    assert len(told) == 1 and "missing" in told[0]["message"]


async def test_a_damaged_blob_is_not_sent(tmp_path: Path) -> None:
    r = rig(tmp_path, window=200_000, replies=[say("seen")])
    await r.harness.prompt("look", [image_block(BIG, "big.png")]).wait()
    path = r.log.path
    r.log.close()
    blob = next(blob_dir(path).iterdir())
    blob.write_bytes(BIG[:-10])
    again = restarted(tmp_path, path)
    await again.harness.prompt("again").wait()
    assert "[image omitted: its stored copy" in again.agent.requests[0].messages[0]["content"]


async def test_a_model_without_images_is_told_once_and_gets_placeholders(tmp_path: Path) -> None:
    r = rig(tmp_path, window=200_000, replies=[say("a"), say("b")])
    r.agent.accepts_images = False  # type: ignore[attr-defined]
    await r.harness.prompt("look", [image_block(SMALL, "small.png")]).wait()
    await r.harness.prompt("more", [image_block(SMALL, "other.png")]).wait()
    for request in r.agent.requests:
        assert all("images" not in m for m in request.messages)
    assert (
        "[image omitted: the model does not accept images: small.png"
        in (r.agent.requests[0].messages[0]["content"])
    )
    told = [e for e in r.events if e["type"] == "images_omitted"]
    assert len(told) == 1 and "does not accept images" in told[0]["message"]


async def test_an_image_counts_as_an_image_not_as_its_base64(tmp_path: Path) -> None:
    r = rig(tmp_path, window=8_000, replies=[say("fine")])
    await r.harness.prompt("look", [image_block(BIG, "big.png")]).wait()
    # 1.3 characters of base64 per byte would put this far past an 8k window.
    assert not [e for e in r.events if e["type"] == "compaction_start"]
    assert r.keeper.context_tokens(r.harness) < 8_000
