"""The images a prompt carries (``crank/prompt`` ``images``, ACP image blocks, ``crank
run --image``), checked here once for every frontend.

Each item is either inline, ``{mimeType, data (base64), name?}``, or a file,
``{path, name?}`` (a path the client resolved from what the user picked; it is read
like ``read`` reads an image, so only PNG, JPEG, GIF and WebP files up to the limit
pass). A ``context`` entry naming a whole image file is taken as an image too
(``context_images``). Anything else is an ``invalid_params`` refusal naming the item and the problem:
bad base64, a type we do not send, data that is not the declared type, too large.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crank.agent.images import ImageError, ImageInput, check_input, sniff_mime
from crank.agent.messages import ImageBlock
from crank.agent.tools import ToolError
from crank.tools.read import load_image_file

from .errors import InvalidParams, invalid_params
from .prompts import ContextRef


def image_of_file(path: Path, where: str) -> ImageBlock:
    try:
        output = load_image_file(path, str(path))
    except ToolError as error:
        raise invalid_params(where, str(error)) from None
    return output.images[0]


def prompt_images(items: Sequence[Any], field: str = "images") -> list[ImageBlock]:
    """The blocks for a prompt's images, in order, or CrankError for the first bad one."""
    blocks: list[ImageBlock] = []
    for index, item in enumerate(items):
        where = f"{field}[{index}]"
        if not isinstance(item, dict):
            raise invalid_params(where, "must be an object {mimeType, data, name?} or {path}")
        name = item.get("name")
        if name is not None and not isinstance(name, str):
            raise invalid_params(f"{where}.name", "must be a string")
        path = item.get("path")
        if path is not None:
            if not isinstance(path, str) or not Path(path).is_absolute():
                raise invalid_params(f"{where}.path", "must be an absolute file path")
            block = image_of_file(Path(path), where)
            if name:
                block["name"] = name
            blocks.append(block)
            continue
        mime, data = item.get("mimeType"), item.get("data")
        if not isinstance(mime, str):
            raise invalid_params(f"{where}.mimeType", "is required (a string)")
        if not isinstance(data, str):
            raise invalid_params(f"{where}.data", "is required (base64 text)")
        try:
            blocks.append(check_input(ImageInput(mime, data, name), where))
        except ImageError as error:
            raise InvalidParams(f"invalid params: {error}") from None
    return blocks


def _starts_as_image(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return sniff_mime(handle.read(16)) is not None
    except OSError:
        return False


def context_images(
    items: Sequence[ContextRef],
) -> tuple[list[ContextRef], list[ImageBlock]]:
    """A prompt's ``context`` split: a whole file that is an image (by its first bytes)
    goes with the prompt as an image rather than as text it cannot be; the rest stays
    context. An image over the limit is refused like any prompt image."""
    kept: list[ContextRef] = []
    images: list[ImageBlock] = []
    for index, item in enumerate(items):
        whole = item.range is None and item.diagnostics is None
        if whole and item.path.is_file() and _starts_as_image(item.path):
            images.append(image_of_file(item.path, f"context[{index}]"))
        else:
            kept.append(item)
    return kept, images
