"""The model catalog: context window, output limit and prices, from ``catalog.json``.

Known models get their published figures; anything else (a local model, a new release)
gets the API family's defaults and no prices, so its cost reads as 0.0 rather than a
guess. An unknown model on an OpenAI-compatible server other than OpenAI's own gets the
conservative ``openaiCompatible`` default (8,192 tokens: most local servers run far
below the 128k a cloud model has) until the server says better (``served.py``).
Configuration can override the window and the output limit for any model.
Dated model ids (``claude-sonnet-4-5-20250929``) resolve to their undated entry.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from crank.agent.messages import Usage

_DATE_SUFFIX = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2})$")


@dataclass(frozen=True)
class Prices:
    """US dollars per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cacheRead: float = 0.0
    cacheWrite: float = 0.0


@dataclass(frozen=True)
class ModelInfo:
    api: str
    id: str
    context_window: int
    max_output_tokens: int
    prices: Prices
    known: bool
    """True when the figures come from the catalog rather than defaults."""
    images: bool = False
    """The model takes images (``"input": ["text", "image"]`` in the catalog); an
    unknown model is taken not to unless configured (``provider.images``)."""


@cache
def _catalog() -> dict[str, Any]:
    text = resources.files("crank.vendors").joinpath("catalog.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def lookup(
    api: str,
    model_id: str,
    *,
    context_window: int | None = None,
    max_output_tokens: int | None = None,
    compatible: bool = False,
    images: bool | None = None,
) -> ModelInfo:
    """Figures for one model; explicit arguments (from configuration) win.
    ``compatible``: served by an OpenAI-compatible server, not by OpenAI itself."""
    catalog = _catalog()
    family = "openaiCompatible" if compatible and api == "openai" else api
    defaults = catalog["defaults"].get(family, catalog["defaults"]["openai"])
    models: dict[str, Any] = catalog["models"].get(api, {})
    entry = models.get(model_id) or models.get(_DATE_SUFFIX.sub("", model_id))
    known = entry is not None
    base = entry if entry is not None else defaults
    prices = Prices(**base["prices"]) if "prices" in base else Prices()
    return ModelInfo(
        api=api,
        id=model_id,
        context_window=context_window or int(base["contextWindow"]),
        max_output_tokens=max_output_tokens or int(base["maxOutputTokens"]),
        prices=prices,
        known=known or context_window is not None,
        images=images if images is not None else "image" in base.get("input", ["text"]),
    )


def known_models() -> list[tuple[str, str, int]]:
    """Every catalogued model as ``(api, id, contextWindow)``, in catalog order."""
    out: list[tuple[str, str, int]] = []
    for api, models in _catalog()["models"].items():
        for model_id, entry in models.items():
            out.append((api, model_id, int(entry["contextWindow"])))
    return out


def cost_of(usage: Usage, prices: Prices) -> float:
    """The reply's price in US dollars, rounded to a millionth of a dollar."""
    total = (
        usage["input"] * prices.input
        + usage["output"] * prices.output
        + usage["cacheRead"] * prices.cacheRead
        + usage["cacheWrite"] * prices.cacheWrite
    ) / 1_000_000
    return round(total, 6)
