"""Images in each API's request shape, checked against what the APIs document:

- Anthropic Messages: ``{"type": "image", "source": {"type": "base64", "media_type",
  "data"}}`` after the text of a user turn, and inside a ``tool_result``'s content list
  after its text;
- OpenAI Chat Completions: ``{"type": "image_url", "image_url": {"url":
  "data:<mime>;base64,..."}}`` parts; a ``tool`` message is text only, so a tool
  result's images follow the batch's last ``tool`` message as one user message.

A model the catalog says takes no images gets placeholders, and the same record always
gives the same bytes (principle 5), whether an image was inline or loaded from a blob.
"""

from __future__ import annotations

import json
from typing import Any

from tests.support.images import b64, png

from crank.agent.images import image_block, resolve_images
from crank.agent.messages import ImageBlock, Message, assistant_message, tool_result, user_message
from crank.agent.model import ModelRequest
from crank.vendors import ProviderConfig
from crank.vendors.anthropic import AnthropicModel
from crank.vendors.catalog import lookup
from crank.vendors.openai import OpenAIModel

PNG = png(4, 4)
BLOCK = image_block(PNG, "dot.png")


def anthropic(model: str = "claude-sonnet-4-5") -> AnthropicModel:
    return AnthropicModel(ProviderConfig(api="anthropic", model=model, base_url="http://x"))


def openai(
    model: str = "gpt-4o", base: str = "https://api.openai.com/v1", **kw: Any
) -> OpenAIModel:
    return OpenAIModel(ProviderConfig(api="openai", model=model, base_url=base, **kw))


def record() -> list[Message]:
    call = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "dot.png"}}
    call2 = {"type": "toolCall", "id": "c2", "name": "read", "arguments": {"path": "a.txt"}}
    return [
        user_message("what is in this picture?", 1, images=[BLOCK]),
        assistant_message([call, call2], stop_reason="toolUse", timestamp=2),  # type: ignore[list-item]
        {**tool_result("c1", "read", "Image file dot.png", images=[BLOCK]), "timestamp": 3},
        {**tool_result("c2", "read", "hello"), "timestamp": 4},
    ]


def request(messages: list[Message]) -> ModelRequest:
    return ModelRequest(system="S", messages=messages)


ANTHROPIC_IMAGE = {
    "type": "image",
    "source": {"type": "base64", "media_type": "image/png", "data": b64(PNG)},
}


def test_anthropic_sends_image_blocks_in_the_user_turn_and_in_the_tool_result() -> None:
    body = anthropic().body(request(record()))
    first, _, results = body["messages"]
    assert first["role"] == "user"
    assert first["content"][0] == {"type": "text", "text": "what is in this picture?"}
    assert first["content"][1] == ANTHROPIC_IMAGE
    assert results["role"] == "user"
    image_result, text_result = results["content"]
    assert image_result["type"] == "tool_result" and image_result["tool_use_id"] == "c1"
    assert image_result["content"][0] == {"type": "text", "text": "Image file dot.png"}
    assert image_result["content"][1] == ANTHROPIC_IMAGE
    assert text_result["content"] == "hello"  # a result without images stays a string


def test_openai_sends_image_url_parts_and_tool_images_after_the_batch() -> None:
    body = openai().body(request(record()))
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "tool", "user"]
    user = body["messages"][1]
    assert user["content"] == [
        {"type": "text", "text": "what is in this picture?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(PNG)}"}},
    ]
    assert body["messages"][3] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "Image file dot.png",
    }
    after = body["messages"][5]["content"]
    assert after[0] == {"type": "text", "text": "The images returned by the read call c1:"}
    assert after[1]["image_url"]["url"].startswith("data:image/png;base64,iVBORw0KGgo")


def test_tool_images_merge_with_the_next_user_message() -> None:
    messages = [*record(), user_message("and now?", 5)]
    body = openai().body(request(messages))
    last = body["messages"][-1]
    assert [m["role"] for m in body["messages"]][-2:] == ["tool", "user"]
    assert last["content"][-1] == {"type": "text", "text": "and now?"}
    assert last["content"][1]["type"] == "image_url"


def test_the_catalog_says_which_models_take_images() -> None:
    assert lookup("anthropic", "claude-sonnet-4-5").images
    assert lookup("anthropic", "claude-haiku-4-5-20251001").images
    assert lookup("openai", "gpt-4o").images and lookup("openai", "gpt-4o-mini").images
    assert not lookup("openai", "llama3.2", compatible=True).images  # unknown local: no
    assert lookup("openai", "llava", compatible=True, images=True).images  # configured


def test_a_model_that_takes_no_images_gets_placeholders_in_both_apis() -> None:
    local = openai("qwen2.5-coder", "http://127.0.0.1:1/v1")
    assert not local.accepts_images
    body = json.dumps(local.body(request(record())))
    assert "image_url" not in body and b64(PNG) not in body
    assert body.count("[image omitted: the model does not accept images: dot.png, image/png") == 2
    configured = openai("llava", "http://127.0.0.1:1/v1", images=True)
    assert "image_url" in json.dumps(configured.body(request(record())))


def test_the_same_record_gives_the_same_bytes_inline_or_from_a_blob() -> None:
    stored: ImageBlock = {k: v for k, v in BLOCK.items() if k != "data"}  # type: ignore[assignment]
    stored["sha256"] = "cd" * 32
    from_blob = [
        user_message("what is in this picture?", 1, images=[stored]),
        *record()[1:],
    ]
    loaded = resolve_images(from_blob, lambda block: BLOCK["data"], True).messages
    for model in (anthropic(), openai()):
        once = json.dumps(model.body(request(record())))
        again = json.dumps(model.body(request(record())))
        assert once == again
        assert "sha256" not in once
        inline_first = json.loads(once)["messages"]
        blob_first = json.loads(json.dumps(model.body(request(loaded))))["messages"]
        # The inline record's first user image has no sha256; the loaded one lost it too.
        assert inline_first[: len(blob_first)] == blob_first
