"""Images at the agent layer: type told by the first bytes, dimensions from headers,
a client's image checked with a message naming the problem, and the request-time
resolution (stored images loaded, placeholders for a model that takes none and for a
blob that is gone) that never changes the record."""

from __future__ import annotations

import copy

import pytest

from crank.agent.images import (
    ImageError,
    ImageInput,
    check_input,
    dimensions,
    image_block,
    resolve_images,
    sendable,
    sniff_mime,
)
from crank.agent.messages import ImageBlock, Message, tool_result, user_message
from tests.support.images import GIF_HEADER, JPEG_HEADER, WEBP_HEADER, b64, png


def test_the_type_comes_from_the_bytes_and_the_size_from_the_header() -> None:
    assert sniff_mime(png()) == "image/png"
    assert dimensions(png(17, 9)) == (17, 9)
    assert sniff_mime(GIF_HEADER) == "image/gif" and dimensions(GIF_HEADER) == (7, 5)
    assert sniff_mime(JPEG_HEADER) == "image/jpeg" and dimensions(JPEG_HEADER) == (640, 480)
    assert sniff_mime(WEBP_HEADER) == "image/webp" and dimensions(WEBP_HEADER) == (100, 50)
    assert sniff_mime(b"BM\x00\x00") is None  # a BMP is no image we send
    assert sniff_mime(b"just text") is None


def test_a_block_names_what_it_holds() -> None:
    block = image_block(png(4, 3), "dot.png")
    assert block["mimeType"] == "image/png" and block["name"] == "dot.png"
    assert (block["width"], block["height"]) == (4, 3)
    assert block["bytes"] == len(png(4, 3)) and block["data"] == b64(png(4, 3))


@pytest.mark.parametrize(
    ("item", "problem"),
    [
        (ImageInput("image/png", "not base64!!"), "images[0].data: not valid base64"),
        (ImageInput("image/bmp", b64(b"BM")), "unsupported image type 'image/bmp'"),
        (ImageInput("image/png", b64(b"hello")), "is not a PNG, JPEG, GIF or WebP image"),
        (ImageInput("image/jpeg", b64(png())), "the data is image/png, not image/jpeg"),
        (ImageInput("image/png", ""), "the image is empty"),
        (ImageInput("image/png", "A" * (8 * 1024 * 1024)), "the limit"),
    ],
)
def test_a_bad_client_image_is_refused_by_name(item: ImageInput, problem: str) -> None:
    with pytest.raises(ImageError) as refused:
        check_input(item, "images[0]")
    assert problem in str(refused.value)
    assert str(refused.value).startswith("images[0]")


def _stored(block: ImageBlock) -> ImageBlock:
    reference: ImageBlock = {k: v for k, v in block.items() if k != "data"}  # type: ignore[assignment]
    reference["sha256"] = "ab" * 32
    return reference


def test_resolution_loads_stored_images_and_leaves_the_record_alone() -> None:
    block = image_block(png(), "a.png")
    record: list[Message] = [
        user_message("look", 1, images=[_stored(block)]),
        user_message("plain", 2),
    ]
    before = copy.deepcopy(record)
    asked: list[str] = []

    def load(ref: ImageBlock) -> str | None:
        asked.append(ref["sha256"])
        return block["data"]

    resolved = resolve_images(record, load, accepts=True)
    assert record == before
    assert asked == ["ab" * 32]
    sent = resolved.messages[0]
    assert sent["role"] == "user" and sent["images"][0]["data"] == block["data"]
    assert "sha256" not in sent["images"][0]
    assert resolved.messages[1] is record[1]
    assert (resolved.omitted, resolved.missing) == (0, 0)


def test_a_missing_blob_becomes_a_placeholder_not_a_crash() -> None:
    block = _stored(image_block(png(), "gone.png"))
    resolved = resolve_images([user_message("see", 1, images=[block])], lambda b: None, True)
    sent = resolved.messages[0]
    assert "images" not in sent
    assert sent["content"].startswith("see\n\n[image omitted: its stored copy abababababab")
    assert "gone.png" in sent["content"] and resolved.missing == 1


def test_a_model_that_takes_no_images_gets_placeholders_and_no_blob_is_read() -> None:
    block = image_block(png(8, 8), "shot.png")
    record: list[Message] = [
        user_message("what is this", 1, images=[_stored(block)]),
        tool_result("c1", "read", "Image file x.png", images=[block]),
    ]

    def load(ref: ImageBlock) -> str | None:
        raise AssertionError("no blob is read for a model that takes no images")

    resolved = resolve_images(record, load, accepts=False)
    assert resolved.omitted == 2
    for message in resolved.messages:
        assert "images" not in message
        assert "[image omitted: the model does not accept images: " in message["content"]
    assert "shot.png, image/png, 8x8" in resolved.messages[0]["content"]


def test_sendable_keeps_inline_images_and_words_the_rest() -> None:
    inline = image_block(png(), "in.png")
    message = user_message("hi", 1, images=[inline, _stored(inline)])
    text, shown = sendable(message, True)
    assert shown == [inline]
    assert text.startswith("hi\n\n[image omitted: its stored copy")
    text, shown = sendable(message, False)
    assert shown == [] and text.count("[image omitted: the model does not accept images") == 2
