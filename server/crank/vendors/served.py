"""What an OpenAI-compatible server says about itself: the models it serves and the
context window it runs with.

Each local server tells it its own way, and none of them in the chat stream:

- ``GET {base}/models`` (every one of them): the ids. vLLM adds ``max_model_len`` (the
  window it runs with), OpenRouter ``context_length``; llama-cpp-python's server lists
  only the id (it has no other endpoint that says its ``n_ctx``).
- ``GET {root}/props`` (the C++ ``llama-server``): ``default_generation_settings.n_ctx``
  (also in its ``/models`` entry's ``meta.n_ctx``), and ``chat_template_caps``: whether
  the template it runs can call tools.
- ``GET {root}/api/v0/models/{id}`` (LM Studio): ``loaded_context_length`` while loaded,
  else ``max_context_length``.
- ``POST {root}/api/show`` (Ollama): ``num_ctx`` among the model's ``parameters`` when
  its Modelfile sets one; otherwise Ollama runs it with its own default
  (``OLLAMA_DEFAULT_CONTEXT``), whatever the model was trained for.
  ``GET {root}/api/tags`` lists Ollama's models when ``/models`` does not.

``{root}`` is the base URL without its ``/v1``. Every question is short (``TIMEOUT``) and
a failed one is only "the server did not say": nothing here raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import httpx

TIMEOUT = 3.0
OLLAMA_DEFAULT_CONTEXT = 4096
"""Ollama's default ``num_ctx`` on machines with less than 24 GiB of VRAM (its docs;
2048 in releases before 0.6). Its OpenAI endpoint cannot change it per request."""
_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class ServedModel:
    id: str
    context_window: int | None = None


def root_of(base_url: str) -> str:
    """The server's own root: the base URL without a trailing ``/v1``."""
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


async def _get_json(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    headers: dict[str, str],
    body: dict[str, Any] | None = None,
) -> Any:
    try:
        response = await client.request(method, url, headers=headers, json=body, timeout=TIMEOUT)
        if response.status_code >= 400:
            return None
        return response.json()
    except (httpx.HTTPError, ValueError):
        return None


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _window_of_entry(entry: dict[str, Any]) -> int | None:
    for key in ("max_model_len", "context_length", "loaded_context_length", "max_context_length"):
        found = _positive(entry.get(key))
        if found is not None:
            return found
    meta = entry.get("meta")  # the C++ llama-server: {"meta": {"n_ctx": ..., ...}}
    return _positive(meta.get("n_ctx")) if isinstance(meta, dict) else None


async def served_models(
    client: httpx.AsyncClient, base_url: str, headers: dict[str, str]
) -> list[ServedModel] | None:
    """The models the server offers, in its order; None when it did not say."""
    listed = await _get_json(client, "GET", f"{base_url.rstrip('/')}/models", headers)
    if isinstance(listed, dict) and isinstance(listed.get("data"), list):
        return [
            ServedModel(entry["id"], _window_of_entry(entry))
            for entry in listed["data"]
            if isinstance(entry, dict) and isinstance(entry.get("id"), str)
        ]
    tags = await _get_json(client, "GET", f"{root_of(base_url)}/api/tags", headers)
    if isinstance(tags, dict) and isinstance(tags.get("models"), list):
        return [
            ServedModel(entry["name"])
            for entry in tags["models"]
            if isinstance(entry, dict) and isinstance(entry.get("name"), str)
        ]
    return None


async def context_window(
    client: httpx.AsyncClient,
    base_url: str,
    headers: dict[str, str],
    model: str,
    listed: list[ServedModel] | None,
) -> int | None:
    """The window the server runs ``model`` with, when it says; ``listed`` is what
    ``served_models`` answered (asked once, used twice)."""
    for entry in listed or ():
        if entry.id == model and entry.context_window is not None:
            return entry.context_window
    root = root_of(base_url)
    props = await _get_json(client, "GET", f"{root}/props", headers)
    if isinstance(props, dict):
        settings = props.get("default_generation_settings")
        found = _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None
        if found is not None:
            return found
    studio = await _get_json(client, "GET", f"{root}/api/v0/models/{model}", headers)
    if isinstance(studio, dict):
        found = _window_of_entry(studio)
        if found is not None:
            return found
    shown = await _get_json(client, "POST", f"{root}/api/show", headers, {"model": model})
    if isinstance(shown, dict) and ("parameters" in shown or "model_info" in shown):
        parameters = shown.get("parameters")
        match = _NUM_CTX.search(parameters) if isinstance(parameters, str) else None
        return int(match.group(1)) if match else OLLAMA_DEFAULT_CONTEXT
    return None


async def template_caps(
    client: httpx.AsyncClient, base_url: str, headers: dict[str, str]
) -> dict[str, Any] | None:
    """The C++ llama-server's ``/props`` ``chat_template_caps`` (``supports_tool_calls``:
    whether the chat template it runs can render and parse tool calls), or None."""
    props = await _get_json(client, "GET", f"{root_of(base_url)}/props", headers)
    caps = props.get("chat_template_caps") if isinstance(props, dict) else None
    return caps if isinstance(caps, dict) else None


def offered(listed: list[ServedModel] | None) -> str:
    """``a, b, c`` (at most 20) for an error message, or "" when nothing is known."""
    if not listed:
        return ""
    names = [entry.id for entry in listed[:20]]
    more = f" and {len(listed) - 20} more" if len(listed) > 20 else ""
    return ", ".join(names) + more
