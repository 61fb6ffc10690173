import json
import logging
from pathlib import Path

import pytest
from vendor_helpers import KEY

from crank.vendors import ConfigError, Secret, create_model, resolve_provider


def test_nothing_configured_is_error_1004_saying_what_to_set(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_provider(None, None, config_file=tmp_path / "config.json", env={})
    assert caught.value.code == 1004
    message = str(caught.value)
    for needed in ("ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "CRANK_PROVIDER", "crank.provider"):
        assert needed in message
    assert str(tmp_path / "config.json") in message


def test_layers_resolve_field_by_field_explicit_first(tmp_path: Path) -> None:
    file = tmp_path / "config.json"
    file.write_text(json.dumps({"provider": {"model": "from-file", "readTimeoutMs": 5000}}))
    env = {"ANTHROPIC_API_KEY": KEY, "CRANK_MODEL": "from-env"}
    config = resolve_provider(
        {"api": "anthropic"}, {"model": "from-section"}, config_file=file, env=env
    )
    assert (config.api, config.model, config.read_timeout) == ("anthropic", "from-section", 5.0)
    assert config.api_key == Secret(KEY)
    assert config.sources["apiKey"] == "environment"
    assert config.base_url == "https://api.anthropic.com"


def test_environment_alone_picks_the_api_and_its_own_variables(tmp_path: Path) -> None:
    file = tmp_path / "absent.json"
    env = {"OPENAI_BASE_URL": "http://localhost:11434/v1/", "CRANK_MODEL": "qwen3"}
    config = resolve_provider(config_file=file, env=env)
    assert (config.api, config.base_url, config.model, config.api_key) == (
        "openai",
        "http://localhost:11434/v1",
        "qwen3",
        None,
    )
    env = {"CRANK_PROVIDER": "openai", "OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": "other"}
    config = resolve_provider(config_file=file, env=env)
    assert config.api == "openai" and config.api_key == Secret(KEY) and config.model == "gpt-4.1"


def test_local_server_without_model_name_says_to_set_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="CRANK_MODEL"):
        resolve_provider(
            {"api": "openai", "baseUrl": "http://127.0.0.1:8080/v1"},
            config_file=tmp_path / "x.json",
        )


def test_hosted_api_without_key_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY") as caught:
        resolve_provider({"api": "anthropic"}, config_file=tmp_path / "x.json")
    assert caught.value.code == 1004


@pytest.mark.parametrize(
    ("provider", "named"),
    [
        ({"api": "gemini"}, "provider.api"),
        ({"api": "openai", "contextWindow": "big"}, "provider.contextWindow"),
        ({"api": "openai", "apiKeys": "x"}, "'apiKeys'"),
    ],
)
def test_bad_settings_are_refused_by_name(
    tmp_path: Path, provider: dict[str, object], named: str
) -> None:
    with pytest.raises(ConfigError, match=named):
        resolve_provider(provider, config_file=tmp_path / "x.json")


def test_unreadable_config_file_is_named(tmp_path: Path) -> None:
    file = tmp_path / "config.json"
    file.write_text("{not json")
    with pytest.raises(ConfigError, match=r"config\.json: not valid JSON"):
        resolve_provider(config_file=file, env={"ANTHROPIC_API_KEY": KEY})


def test_scripted_is_allowed_but_not_built_here(tmp_path: Path) -> None:
    config = resolve_provider({"api": "scripted"}, config_file=tmp_path / "x.json")
    assert config.api == "scripted"
    with pytest.raises(ConfigError, match="scripted"):
        create_model(config)


def test_the_key_never_prints(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    config = resolve_provider({"api": "anthropic", "apiKey": KEY}, config_file=tmp_path / "x.json")
    model = create_model(config)
    for text in (
        repr(config),
        str(config),
        repr(model),
        json.dumps(config.public()),
        str(config.api_key),
    ):
        assert KEY not in text
    assert config.public()["hasApiKey"] is True
    assert config.api_key is not None and config.api_key.reveal() == KEY


def test_credentials_in_a_base_url_are_never_shown() -> None:
    from crank.vendors.config import without_credentials

    assert (
        without_credentials("https://user:sk-123@proxy.example/v1")
        == "https://***@proxy.example/v1"
    )
    assert without_credentials("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/v1"
    assert without_credentials(None) is None


def test_redact_takes_out_known_keys_and_key_shaped_values() -> None:
    from crank.vendors import redact

    held = Secret("held-key-without-a-shape-42")
    assert "held-key" not in redact(f"params={{'x': '{held.reveal()}'}}")
    for line, secret in [
        ('{"apiKey": "abc123"}', "abc123"),
        ("{'api_key': 'abc123'}", "abc123"),
        ('"x-api-key": "abc123"', "abc123"),
        ("Authorization: Bearer tok.en-123", "tok.en-123"),
        ("used sk-proj-0123456789abcdef", "0123456789abcdef"),
    ]:
        assert secret not in redact(line), line
    assert (
        redact('{"model": "m", "token": "progress-1"}') == '{"model": "m", "token": "progress-1"}'
    )
