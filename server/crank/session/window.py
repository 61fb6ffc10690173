"""A session's window arithmetic: how many tokens a request may reach before compaction,
how much a compaction keeps, where clearing starts. One object, read by the request
view and by compaction alike, so the two can never disagree about the numbers."""

from __future__ import annotations

from dataclasses import dataclass

from crank.agent.model import Model

from .policies import PolicyName

DEFAULT_RESERVE = 16_384
SMALL_WINDOW_RESERVE_SHARE = 5
"""On a window too small for the default reserve, a fifth of it is kept free instead."""


@dataclass(frozen=True)
class ContextSettings:
    reserve_tokens: int | None = None
    """Kept free for the reply and what the estimate misses. Default: 16,384, or a
    fifth of a small window."""
    keep_recent_tokens: int = 20_000
    """About how much of the newest conversation a compaction keeps word for word (at
    most a third of the usable window, so a small window still gets room back)."""
    policy: PolicyName = "default"
    """``none`` | ``cache`` | ``clear`` | ``compact`` | ``trim`` | ``default``."""
    clear_at_tokens: int | None = None
    """Clear old results once a request passes this. Default: the kept size."""

    def reserve(self, window: int) -> int:
        if self.reserve_tokens is not None:
            return max(0, self.reserve_tokens)
        return min(DEFAULT_RESERVE, window // SMALL_WINDOW_RESERVE_SHARE)


class Window:
    """The limits of one session's requests under its current model and settings."""

    def __init__(self, model: Model, settings: ContextSettings) -> None:
        self.model = model
        """Replaced on a model switch (``Housekeeper.set_model``); read at every call."""
        self.settings = settings

    @property
    def tokens(self) -> int:
        return max(1, self.model.context_window)

    def threshold(self) -> int:
        """Compaction starts when the next request would pass this many tokens."""
        return self.tokens - self.settings.reserve(self.tokens)

    def keep_tokens(self) -> int:
        return max(1, min(self.settings.keep_recent_tokens, self.threshold() // 3))

    def clear_at(self) -> int:
        return self.settings.clear_at_tokens or self.keep_tokens()


__all__ = ["DEFAULT_RESERVE", "ContextSettings", "Window"]
