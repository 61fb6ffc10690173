"""A key goes only to the endpoint it was configured with, whatever model is picked.

Two real loopback model servers stand for two endpoints (an Anthropic one and an
OpenAI-compatible one, each recording the headers of every request); the real server
runs over stdio with its configuration in the places users put it: the start-up
options, the user config file, the environment. After every switch of model the tests
read what each endpoint received and check that no request carried a key configured
for the other one.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.support.model_server import ModelServer

from .helpers import running_server
from .test_runs import project
from .test_sessions import ask

ANTHROPIC_KEY = "sk-ant-for-the-anthropic-endpoint-only"
OPENAI_KEY = "sk-openai-for-the-openai-endpoint-only"
KEYS = (ANTHROPIC_KEY, OPENAI_KEY)


def user_config(tmp_path: Path, provider: dict[str, Any]) -> None:
    """The user config file where ``running_server`` points XDG_CONFIG_HOME."""
    folder = tmp_path / "home" / "config" / "crank"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"provider": provider}))


def keys_sent(server: ModelServer) -> set[str]:
    """Every configured key that appears in any header of any request to ``server``."""
    found = set()
    for request in server.requests:
        for value in request["headers"].values():
            found.update(key for key in KEYS if key in value)
    return found


def sessions(tmp_path: Path) -> dict[str, Any]:
    return {"sessionDir": str(tmp_path / "sessions")}


async def test_switching_api_takes_that_apis_key_and_endpoint(tmp_path: Path) -> None:
    """Anthropic set up in the user config file, OpenAI in the environment. Before, the
    switch to an OpenAI model merged the file's Anthropic base URL and key under the
    new api: OpenAI requests went to the Anthropic endpoint carrying its key."""
    with (
        ModelServer({"replies": [{"text": "a"}] * 3}) as claude,
        ModelServer({"replies": [{"text": "o"}] * 3}) as gpt,
    ):
        user_config(tmp_path, {"api": "anthropic", "baseUrl": claude.url, "apiKey": ANTHROPIC_KEY})
        env = {"OPENAI_API_KEY": OPENAI_KEY, "OPENAI_BASE_URL": f"{gpt.url}/v1"}
        folder = project(tmp_path)
        async with running_server(tmp_path, [folder], sessions(tmp_path), extra_env=env) as crank:
            await ask(crank, "first")
            assert len(claude.requests) == 1 and not gpt.requests
            assert keys_sent(claude) == {ANTHROPIC_KEY}

            picked = await crank.request("crank/setModel", {"api": "openai", "id": "gpt-4.1"})
            assert picked == {"model": {"api": "openai", "id": "gpt-4.1"}}
            await ask(crank, "second")
            assert len(claude.requests) == 1, "the OpenAI request went to Anthropic"
            assert len(gpt.requests) == 1
            assert gpt.requests[0]["path"] == "/v1/chat/completions"
            assert gpt.requests[0]["body"]["model"] == "gpt-4.1"
            assert keys_sent(gpt) == {OPENAI_KEY}

            back = {"api": "anthropic", "id": "claude-sonnet-4-5"}
            await crank.request("crank/setModel", back)
            await ask(crank, "third")
            assert len(claude.requests) == 2 and len(gpt.requests) == 1
            assert keys_sent(claude) == {ANTHROPIC_KEY}
            assert keys_sent(gpt) == {OPENAI_KEY}


async def test_a_claude_model_is_refused_on_a_local_server(tmp_path: Path) -> None:
    """A local OpenAI-compatible server in the config file and no Anthropic key: before,
    picking a Claude model sent Anthropic requests to the local server. Now the switch
    is refused, the message says what to set, and the model stays as it was."""
    with ModelServer({"replies": [{"text": "local"}] * 2}) as local:
        user_config(tmp_path, {"api": "openai", "baseUrl": f"{local.url}/v1", "model": "qwen"})
        async with running_server(tmp_path, [project(tmp_path)], sessions(tmp_path)) as crank:
            with pytest.raises(JsonRpcException) as refused:
                await crank.request("crank/setModel", {"api": "anthropic", "id": "claude-opus-4"})
            assert refused.value.code == 1004
            message = str(refused.value)
            assert "ANTHROPIC_API_KEY" in message and "claude-opus-4" in message
            state = await crank.request("crank/state", {})
            assert (state["model"]["api"], state["model"]["id"]) == ("openai", "qwen")
            # Where it is asked, though the editor set none: the environment's URL.
            assert state["model"]["baseUrl"] == f"{local.url}/v1"
            await ask(crank, "still local")
            assert [r["path"] for r in local.requests] == ["/v1/chat/completions"]
            assert local.requests[0]["body"]["model"] == "qwen"


async def test_a_key_never_follows_a_base_url_set_somewhere_else(tmp_path: Path) -> None:
    """The editor points an OpenAI-compatible api at a local server; the shell holds a
    real OpenAI key. Before, the key was merged in field by field and sent to the local
    server. It belongs to api.openai.com (no OPENAI_BASE_URL), so it stays home; a key
    given together with the base URL is sent."""
    with ModelServer({"replies": [{"text": "x"}] * 2}) as local:
        editor = {"api": "openai", "baseUrl": f"{local.url}/v1", "model": "qwen"}
        env = {"OPENAI_API_KEY": OPENAI_KEY}
        options = {"provider": editor, **sessions(tmp_path)}
        async with running_server(tmp_path, [project(tmp_path)], options, extra_env=env) as crank:
            await ask(crank, "hello")
            assert len(local.requests) == 1 and keys_sent(local) == set()
            logged = " ".join(m.message for m in crank.client.log_messages)
            assert "environment" in logged and "api.openai.com" in logged
            assert OPENAI_KEY not in logged

    with ModelServer({"replies": [{"text": "x"}]}) as local:
        editor = {"api": "openai", "baseUrl": f"{local.url}/v1", "model": "q", "apiKey": OPENAI_KEY}
        options = {"provider": editor, **sessions(tmp_path)}
        async with running_server(tmp_path, [project(tmp_path)], options) as crank:
            await ask(crank, "hello")
            assert keys_sent(local) == {OPENAI_KEY}


async def test_same_api_switch_keeps_endpoint_and_key_and_drops_the_window(
    tmp_path: Path,
) -> None:
    """A model of the same api on the same endpoint only changes the model; the window
    configured for the old model does not follow it to the new one."""
    with ModelServer({"replies": [{"text": "x"}] * 2}) as local:
        editor = {
            "api": "openai",
            "baseUrl": f"{local.url}/v1",
            "model": "small",
            "apiKey": OPENAI_KEY,
            "contextWindow": 4096,
        }
        options = {"provider": editor, **sessions(tmp_path)}
        async with running_server(tmp_path, [project(tmp_path)], options) as crank:
            assert (await crank.request("crank/state", {}))["usage"]["contextWindow"] == 4096
            await crank.request("crank/setModel", {"api": "openai", "id": "gpt-4.1"})
            state = await crank.request("crank/state", {})
            assert state["usage"]["contextWindow"] != 4096
            await ask(crank, "hello")
            assert local.requests[0]["body"]["model"] == "gpt-4.1"
            assert keys_sent(local) == {OPENAI_KEY}


async def test_a_pushed_base_url_does_not_take_the_start_up_key_along(tmp_path: Path) -> None:
    """The key came with the start-up options for one server; a later change points the
    provider somewhere else without a key. Before, the old key went to the new URL."""
    with (
        ModelServer({"replies": [{"text": "a"}]}) as first,
        ModelServer({"replies": [{"text": "b"}]}) as second,
    ):
        editor = {"api": "openai", "baseUrl": f"{first.url}/v1", "model": "m", "apiKey": OPENAI_KEY}
        options = {"provider": editor, **sessions(tmp_path)}
        async with running_server(tmp_path, [project(tmp_path)], options) as crank:
            await ask(crank, "one")
            crank.client.workspace_did_change_configuration(
                types.DidChangeConfigurationParams(
                    settings={"crank": {"provider": {"baseUrl": f"{second.url}/v1"}}}
                )
            )
            for _ in range(1000):  # the change is applied in the background
                if any("not sent to" in m.message for m in crank.client.log_messages):
                    break
                await asyncio.sleep(0.01)
            await ask(crank, "two")
            assert len(first.requests) == 1 and len(second.requests) == 1
            assert keys_sent(first) == {OPENAI_KEY}
            assert keys_sent(second) == set()


async def test_the_editors_stored_key_does_not_follow_the_environments_api(
    tmp_path: Path,
) -> None:
    """What the VS Code extension sends with a stored key and no api set: the key
    alone. The shell points at a local OpenAI-compatible server (the README's set-up).
    Before, the stored (Anthropic) key went to the local server."""
    with ModelServer({"replies": [{"text": "local"}]}) as local:
        env = {"OPENAI_BASE_URL": f"{local.url}/v1", "CRANK_MODEL": "qwen"}
        options = {"provider": {"apiKey": ANTHROPIC_KEY}, **sessions(tmp_path)}
        async with running_server(tmp_path, [project(tmp_path)], options, extra_env=env) as crank:
            await ask(crank, "hello")
            state = await crank.request("crank/state", {})
            assert (state["model"]["api"], state["model"]["id"]) == ("openai", "qwen")
            # Where it is asked, though the editor set none: the environment's URL.
            assert state["model"]["baseUrl"] == f"{local.url}/v1"
        assert len(local.requests) == 1 and keys_sent(local) == set()
