"""read on image files: a real PNG (and the other kinds, told by their first bytes, not
their names) comes back as an image block after one line describing it; a file named
as an image that is none, an image kind we do not send, and one over the limit are
refused with a message saying which."""

from __future__ import annotations

import base64
from pathlib import Path

from crank.agent.images import MAX_IMAGE_BYTES
from crank.agent.model import AbortSignal
from crank.agent.tools import Tool, run_tool
from tests.support.images import GIF_HEADER, png


async def read(tools: list[Tool], path: str):  # type: ignore[no-untyped-def]
    block = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": path}}
    message, details = await run_tool(tools, block, AbortSignal(), lambda _: None)  # type: ignore[arg-type]
    return message, details


async def test_a_png_comes_back_as_an_image(root: Path, tools: list[Tool]) -> None:
    data = png(6, 5)
    (root / "logo.png").write_bytes(data)
    message, details = await read(tools, "logo.png")
    assert not message["isError"]
    assert (
        message["content"]
        == f"Image file logo.png (logo.png, image/png, 6x5, {len(data)} B), attached below."
    )
    (image,) = message["images"]
    assert image["mimeType"] == "image/png" and base64.b64decode(image["data"]) == data
    assert (image["width"], image["height"]) == (6, 5)
    assert details is not None and details["path"].endswith("logo.png")


async def test_the_kind_comes_from_the_bytes_not_the_name(root: Path, tools: list[Tool]) -> None:
    (root / "screenshot.dat").write_bytes(png(2, 2))
    (root / "anim").write_bytes(GIF_HEADER + b"\x00" * 20)
    message, _ = await read(tools, "screenshot.dat")
    assert message["images"][0]["mimeType"] == "image/png"
    message, _ = await read(tools, "anim")
    assert message["images"][0]["mimeType"] == "image/gif"
    assert "7x5" in message["content"]


async def test_a_text_file_named_png_is_refused_not_sent(root: Path, tools: list[Tool]) -> None:
    (root / "fake.png").write_text("I am text\n")
    message, _ = await read(tools, "fake.png")
    assert message["isError"] and "images" not in message
    assert (
        "named as an image (.png) but is not a PNG, JPEG, GIF or WebP image" in message["content"]
    )


async def test_a_bmp_is_refused_by_kind(root: Path, tools: list[Tool]) -> None:
    (root / "old.bmp").write_bytes(b"BM" + b"\x00" * 60)
    message, _ = await read(tools, "old.bmp")
    assert message["isError"] and "not a PNG, JPEG, GIF or WebP" in message["content"]


async def test_an_image_over_the_limit_is_refused(root: Path, tools: list[Tool]) -> None:
    header = png(40, 30)
    (root / "huge.png").write_bytes(header + b"\x00" * (MAX_IMAGE_BYTES + 1))
    message, _ = await read(tools, "huge.png")
    assert message["isError"] and "images" not in message
    assert (
        "huge.png is an image (image/png, 40x30, 5.0 MB), larger than the 5.0 MB"
        in (message["content"])
    )


async def test_text_files_read_as_before(root: Path, tools: list[Tool]) -> None:
    (root / "a.txt").write_text("plain\n")
    message, _ = await read(tools, "a.txt")
    assert message["content"] == "plain" and "images" not in message
