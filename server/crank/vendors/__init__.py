"""crank.vendors: real model APIs behind the agent's ``Model`` interface.

``resolve_provider`` finds the configuration, ``create_model`` turns it into a model
that streams neutral events over HTTP (Anthropic Messages or OpenAI-compatible Chat
Completions). See docs/vendors.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crank.lazy import exports

if TYPE_CHECKING:
    from .anthropic import AnthropicModel  # noqa: F401
    from .catalog import (  # noqa: F401  (re-exported: crank.lazy)
        ModelInfo,
        cost_of,
        known_models,
        lookup,
    )
    from .config import (  # noqa: F401  (re-exported: crank.lazy)
        NO_PROVIDER,
        ConfigError,
        ConfigErrorKind,
        ProviderConfig,
        RedactingFormatter,
        Secret,
        redact,
        resolve_provider,
    )
    from .errors import (  # noqa: F401  (re-exported: crank.lazy)
        ProviderError,
        classify,
    )
    from .factory import (  # noqa: F401  (re-exported: crank.lazy)
        create_model,
        discover,
    )
    from .openai import OpenAIModel  # noqa: F401
    from .served import ServedModel  # noqa: F401


__getattr__, __dir__, __all__ = exports(__name__, __file__)
