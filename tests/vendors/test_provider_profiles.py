"""Provider profiles: which layers speak for which api, and which key goes where.

Pure resolution (no HTTP): the loopback tests that watch the keys on the wire are in
tests/lsp/test_key_endpoints.py. Each case here was wrong before profiles: the layers
were merged field by field whatever api they were written for.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crank.vendors import ConfigError, Secret, resolve_provider

ANT = "sk-ant-key"
OAI = "sk-openai-key"


def config_file(tmp_path: Path, provider: dict[str, object]) -> Path:
    file = tmp_path / "config.json"
    file.write_text(json.dumps({"provider": provider}))
    return file


def test_the_config_files_api_wins_when_the_editor_names_none(tmp_path: Path) -> None:
    """The editor sends only what the user set: its model alone must not turn an
    OpenAI-compatible config file into Anthropic."""
    file = config_file(tmp_path, {"api": "openai", "baseUrl": "http://127.0.0.1:1/v1"})
    config = resolve_provider({"model": "qwen"}, config_file=file, env={})
    assert (config.api, config.base_url, config.model) == (
        "openai",
        "http://127.0.0.1:1/v1",
        "qwen",
    )
    assert config.sources["api"] == str(file)


def test_the_readmes_environment_set_up_works_under_editor_settings(tmp_path: Path) -> None:
    env = {"OPENAI_BASE_URL": "http://localhost:11434/v1", "CRANK_MODEL": "qwen2.5-coder"}
    config = resolve_provider({}, None, config_file=tmp_path / "none.json", env=env)
    assert (config.api, config.model) == ("openai", "qwen2.5-coder")


def test_a_layer_for_another_api_contributes_nothing(tmp_path: Path) -> None:
    """The editor chose a local OpenAI-compatible server; the config file holds an
    Anthropic set-up. Before, its key (and its model) were merged in."""
    file = config_file(tmp_path, {"api": "anthropic", "apiKey": ANT, "model": "claude-x"})
    editor = {"api": "openai", "baseUrl": "http://127.0.0.1:1/v1", "model": "qwen"}
    config = resolve_provider(editor, config_file=file, env={})
    assert config.api_key is None and config.model == "qwen"


def test_crank_model_belongs_to_crank_provider(tmp_path: Path) -> None:
    env = {"CRANK_PROVIDER": "anthropic", "CRANK_MODEL": "claude-x", "ANTHROPIC_API_KEY": ANT}
    editor = {"api": "openai", "baseUrl": "http://127.0.0.1:1/v1", "model": "qwen"}
    config = resolve_provider(editor, config_file=tmp_path / "none.json", env=env)
    assert (config.api, config.model, config.api_key) == ("openai", "qwen", None)
    assert resolve_provider(config_file=tmp_path / "none.json", env=env).model == "claude-x"


def test_a_key_is_bound_to_the_base_url_of_its_own_layer(tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": OAI}
    editor = {"api": "openai", "baseUrl": "http://127.0.0.1:1/v1", "model": "qwen"}
    config = resolve_provider(editor, config_file=tmp_path / "none.json", env=env)
    assert config.api_key is None
    assert config.withheld_keys == (
        "the key from environment (configured for https://api.openai.com/v1)",
    )
    assert OAI not in repr(config)
    # the same key with its base URL in the same place is sent
    env = {"OPENAI_API_KEY": OAI, "OPENAI_BASE_URL": "http://127.0.0.1:1/v1/"}
    config = resolve_provider({"model": "qwen"}, config_file=tmp_path / "none.json", env=env)
    assert config.api_key == Secret(OAI) and config.withheld_keys == ()


def test_another_apis_profile_takes_only_what_names_it(tmp_path: Path) -> None:
    """``api=`` (crank/setModel): the primary api's key-holding layer stays out."""
    editor = {"apiKey": ANT}  # the editor's stored key, no api named: the primary's
    env = {"OPENAI_API_KEY": OAI, "ANTHROPIC_BASE_URL": "http://127.0.0.1:2"}
    none = tmp_path / "none.json"
    primary = resolve_provider(editor, config_file=none, env=env)
    assert primary.api == "anthropic" and primary.api_key is None  # ANT is for the default URL
    other = resolve_provider(editor, config_file=none, env=env, api="openai", model="gpt-4.1")
    assert (other.api, other.base_url, other.model) == (
        "openai",
        "https://api.openai.com/v1",
        "gpt-4.1",
    )
    assert other.api_key == Secret(OAI)
    with pytest.raises(ConfigError) as refused:
        resolve_provider(
            {"api": "openai", "apiKey": OAI}, config_file=none, env={}, api="anthropic"
        )
    assert "ANTHROPIC_API_KEY" in str(refused.value) and OAI not in str(refused.value)


def test_a_window_stays_with_its_model(tmp_path: Path) -> None:
    editor = {"api": "openai", "baseUrl": "http://h/v1", "model": "small", "contextWindow": 4096}
    none = tmp_path / "none.json"
    assert (
        resolve_provider(editor, config_file=none, api="openai", model="small").context_window
        == 4096
    )
    assert (
        resolve_provider(editor, config_file=none, api="openai", model="big").context_window is None
    )


def test_a_base_url_without_any_api_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"settings\[0\]: provider.baseUrl .*provider.api"):
        resolve_provider({"baseUrl": "http://127.0.0.1:1/v1"}, config_file=tmp_path / "n.json")


def test_a_key_alone_means_anthropic_as_the_editor_setting_did(tmp_path: Path) -> None:
    config = resolve_provider({"apiKey": ANT}, config_file=tmp_path / "n.json", env={})
    assert config.api == "anthropic" and config.api_key == Secret(ANT)


def test_a_held_back_key_is_named_only_when_no_key_goes_out(tmp_path: Path) -> None:
    editor = {"api": "openai", "baseUrl": "http://h:1/v1", "model": "q", "apiKey": "sk-local-key-1"}
    config = resolve_provider(editor, config_file=tmp_path / "n.json", env={"OPENAI_API_KEY": OAI})
    assert config.api_key == Secret("sk-local-key-1") and config.withheld_keys == ()


async def test_an_auth_error_says_which_key_was_held_back(tmp_path: Path) -> None:
    """OpenRouter-style: the base URL set in the editor, the key only in the shell for
    api.openai.com. The server's 401 then says why no key went out and what to do."""
    from tests.support.model_server import ModelServer
    from vendor_helpers import collect, done_message

    from crank.vendors import create_model

    async with ModelServer([{"status": 401, "errorMessage": "No auth credentials"}]) as server:
        editor = {"api": "openai", "baseUrl": f"{server.url}/v1", "model": "m"}
        env = {"OPENAI_API_KEY": OAI}
        config = resolve_provider(editor, config_file=tmp_path / "n.json", env=env)
        reply = done_message(await collect(create_model(config)))
        assert "authorization" not in server.requests[0]["headers"]
    assert reply["errorKind"] == "auth"
    assert "the key from environment" in reply["errorMessage"]
    assert "api.openai.com" in reply["errorMessage"] and OAI not in reply["errorMessage"]


def test_a_key_given_with_no_api_is_not_lent_to_the_api_the_environment_picks(
    tmp_path: Path,
) -> None:
    """The editor's stored key (no api named: an Anthropic key under the old default)
    and OPENAI_* in the shell: before, the stored key went to the OpenAI endpoint."""
    none = tmp_path / "n.json"
    env = {"OPENAI_API_KEY": OAI}
    config = resolve_provider({"apiKey": ANT}, config_file=none, env=env)
    assert config.api == "openai" and config.api_key == Secret(OAI)
    local = {"OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "CRANK_MODEL": "q"}
    config = resolve_provider({"apiKey": ANT}, config_file=none, env=local)
    assert config.api_key is None
    assert config.withheld_keys == ("the key from settings[0] (given with no provider.api)",)
    # with the api named beside it, the key is the editor's choice and goes out
    named = resolve_provider({"api": "openai", "apiKey": OAI}, config_file=none, env=env)
    assert named.api_key == Secret(OAI) and named.sources["apiKey"] == "settings[0]"
