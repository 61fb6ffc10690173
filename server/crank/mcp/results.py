"""A ``tools/call`` result as Crank's ``ToolOutput``.

Text as text; an image as an image block (stored like an image ``read`` returned, so
the model sees it and the session keeps it once); an embedded text resource as its
text under its URI; a resource link as a line naming it; ``structuredContent`` as JSON
text when the server gave no text of its own; ``isError`` as a tool error. Audio and
binary resources are named, not sent. The whole is bounded by the tool boundary's
budget (``run_tool``), like every tool's output. It is data from the server: nothing
in it is read as an instruction.
"""

from __future__ import annotations

import base64
import binascii
import json

from crank.agent.images import ImageError, image_block
from crank.agent.messages import ImageBlock
from crank.agent.tools import ToolOutput
from mcp import types


def _image(data: str, mime: str, server: str) -> tuple[ImageBlock | None, str]:
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None, f"[image from {server} could not be decoded: not base64]"
    try:
        return image_block(raw, f"{server} image"), ""
    except ImageError as exc:
        return None, f"[image ({mime}) from {server} not shown: {exc}]"


def to_output(result: types.CallToolResult, server: str) -> ToolOutput:
    texts: list[str] = []
    images: list[ImageBlock] = []
    for item in result.content:
        if isinstance(item, types.TextContent):
            texts.append(item.text)
        elif isinstance(item, types.ImageContent):
            block, note = _image(item.data, item.mimeType, server)
            if block is not None:
                images.append(block)
                texts.append(f"[image {item.mimeType}, {block['bytes']} bytes]")
            else:
                texts.append(note)
        elif isinstance(item, types.EmbeddedResource):
            resource = item.resource
            if isinstance(resource, types.TextResourceContents):
                texts.append(f"[resource {resource.uri}]\n{resource.text}")
            else:
                texts.append(
                    f"[binary resource {resource.uri} ({resource.mimeType or 'no type'}) not shown]"
                )
        elif isinstance(item, types.ResourceLink):
            about = f": {item.description}" if item.description else ""
            texts.append(f"[resource link {item.uri} ({item.name}){about}]")
        elif isinstance(item, types.AudioContent):
            texts.append(f"[audio ({item.mimeType}) from {server} not shown]")
    if result.structuredContent is not None and not any(t.strip() for t in texts):
        texts.append(json.dumps(result.structuredContent, ensure_ascii=False, indent=1))
    text = "\n".join(texts)
    if result.isError:
        text = text or f"MCP server {server!r} reported an error without a message"
    elif not text and not images:
        text = "(the tool returned no content)"
    details = {"mcp": {"server": server}}
    return ToolOutput(text, is_error=bool(result.isError), details=details, images=tuple(images))
