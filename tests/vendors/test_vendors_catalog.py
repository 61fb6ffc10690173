from crank.agent.messages import Usage
from crank.vendors import cost_of, known_models, lookup


def test_known_model_and_dated_alias() -> None:
    info = lookup("anthropic", "claude-sonnet-4-5-20250929")
    assert info.known and info.context_window == 200_000 and info.prices.input == 3.0
    assert lookup("openai", "gpt-4o").max_output_tokens == 16384


def test_unknown_model_gets_defaults_and_config_overrides() -> None:
    info = lookup("openai", "qwen3:8b")
    assert not info.known and info.context_window == 128_000 and info.prices.output == 0.0
    info = lookup("openai", "qwen3:8b", context_window=32_768, max_output_tokens=2048)
    assert (info.context_window, info.max_output_tokens, info.known) == (32_768, 2048, True)


def test_cost_counts_every_kind_of_token() -> None:
    usage: Usage = {
        "input": 1_000_000,
        "output": 100_000,
        "cacheRead": 2_000_000,
        "cacheWrite": 10_000,
    }
    prices = lookup("anthropic", "claude-sonnet-4-5").prices
    assert cost_of(usage, prices) == round(3.0 + 1.5 + 0.6 + 0.0375, 6)


def test_catalog_lists_both_families() -> None:
    apis = {api for api, _, _ in known_models()}
    assert apis == {"anthropic", "openai"}
