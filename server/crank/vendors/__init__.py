"""crank.vendors: real model APIs behind the agent's ``Model`` interface.

``resolve_provider`` finds the configuration, ``create_model`` turns it into a model
that streams neutral events over HTTP (Anthropic Messages or OpenAI-compatible Chat
Completions). See docs/vendors.md.
"""

from .anthropic import AnthropicModel
from .catalog import ModelInfo, cost_of, known_models, lookup
from .config import NO_PROVIDER, ConfigError, ProviderConfig, Secret, redact, resolve_provider
from .errors import ProviderError, classify
from .factory import create_model
from .openai import OpenAIModel

__all__ = [
    "NO_PROVIDER",
    "AnthropicModel",
    "ConfigError",
    "ModelInfo",
    "OpenAIModel",
    "ProviderConfig",
    "ProviderError",
    "Secret",
    "classify",
    "cost_of",
    "create_model",
    "known_models",
    "lookup",
    "redact",
    "resolve_provider",
]
