"""crank.vendors: real model APIs behind the agent's ``Model`` interface.

``resolve_provider`` finds the configuration, ``create_model`` turns it into a model
that streams neutral events over HTTP (Anthropic Messages or OpenAI-compatible Chat
Completions). See docs/vendors.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crank.lazy import exports

if TYPE_CHECKING:
    from .anthropic import AnthropicModel
    from .catalog import ModelInfo, cost_of, known_models, lookup
    from .config import (
        NO_PROVIDER,
        ConfigError,
        ConfigErrorKind,
        ProviderConfig,
        RedactingFormatter,
        Secret,
        redact,
        resolve_provider,
    )
    from .errors import ProviderError, classify
    from .factory import create_model, discover
    from .openai import OpenAIModel
    from .served import ServedModel

__all__ = [
    "NO_PROVIDER",
    "AnthropicModel",
    "ConfigError",
    "ConfigErrorKind",
    "ModelInfo",
    "OpenAIModel",
    "ProviderConfig",
    "ProviderError",
    "RedactingFormatter",
    "Secret",
    "ServedModel",
    "classify",
    "cost_of",
    "create_model",
    "discover",
    "known_models",
    "lookup",
    "redact",
    "resolve_provider",
]

__getattr__, __dir__ = exports(
    __name__,
    {
        ".anthropic": ["AnthropicModel"],
        ".catalog": ["ModelInfo", "cost_of", "known_models", "lookup"],
        ".config": [
            "NO_PROVIDER",
            "ConfigError",
            "ConfigErrorKind",
            "ProviderConfig",
            "RedactingFormatter",
            "Secret",
            "redact",
            "resolve_provider",
        ],
        ".errors": ["ProviderError", "classify"],
        ".factory": ["create_model", "discover"],
        ".openai": ["OpenAIModel"],
        ".served": ["ServedModel"],
    },
)
