"""Provider failures as data: a kind, the provider's own message, and whether to retry.

Classification reads structure first (the HTTP status, the error ``type`` or ``code``
the API put in its body) and falls back to a short list of phrases only for context
overflow, because local OpenAI-compatible servers report it with a plain 400 and
their own wording. The provider's message is always kept in the text.
"""

from __future__ import annotations

import email.utils
import json
import time
from dataclasses import dataclass
from typing import Any

from crank.agent.messages import ErrorKind

RETRYABLE: frozenset[ErrorKind] = frozenset({"rate_limit", "overloaded", "server", "network"})

_TYPE_KINDS: dict[str, ErrorKind] = {
    "rate_limit_error": "rate_limit",
    "rate_limit_exceeded": "rate_limit",
    "overloaded_error": "overloaded",
    "api_error": "server",
    "server_error": "server",
    "internal_server_error": "server",
    "authentication_error": "auth",
    "permission_error": "auth",
    "invalid_api_key": "auth",
    "request_too_large": "overflow",
    "context_length_exceeded": "overflow",
    "string_above_max_length": "overflow",
}
_OVERFLOW_PHRASES = (
    "prompt is too long",
    "context length",
    "context window",
    "maximum context",
    "exceeds the context",
    "exceeds the available context",
    "too many tokens",
    "context_length_exceeded",
)


@dataclass(frozen=True)
class ProviderError:
    kind: ErrorKind
    message: str
    status: int | None = None
    retry_after: float | None = None
    """Seconds the provider asked us to wait, when it said."""
    retryable: bool = True

    @property
    def should_retry(self) -> bool:
        return self.retryable and self.kind in RETRYABLE


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After`` as seconds: either a number or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _error_fields(body: Any) -> tuple[str, str, str]:
    """``(type, code, message)`` from Anthropic's or OpenAI's error body shapes."""
    if not isinstance(body, dict):
        return "", "", ""
    error = body.get("error", body)
    if isinstance(error, str):
        return "", "", error
    if not isinstance(error, dict):
        return "", "", ""
    kind = error.get("type")
    code = error.get("code")
    message = error.get("message")
    return (
        kind if isinstance(kind, str) else "",
        code if isinstance(code, str) else "",
        message if isinstance(message, str) else "",
    )


def looks_like_overflow(message: str) -> bool:
    lowered = message.lower()
    return any(phrase in lowered for phrase in _OVERFLOW_PHRASES)


def classify(
    status: int | None, body: Any, *, retry_after: str | None = None, provider: str = ""
) -> ProviderError:
    """Classify an HTTP error response or an in-stream error event."""
    error_type, code, message = _error_fields(body)
    if not message:
        message = body if isinstance(body, str) and body else f"HTTP {status}"
    kind = _TYPE_KINDS.get(code) or _TYPE_KINDS.get(error_type) or _kind_for_status(status)
    if kind == "server" and status is not None and 400 <= status < 500:
        # Ollama labels a 404 for an unknown model "api_error": the status says it is
        # the request, and retrying it cannot help.
        kind = _kind_for_status(status)
    if kind in ("invalid_request", "server") and looks_like_overflow(message):
        kind = "overflow"
    retryable = code != "insufficient_quota"
    label = f"{provider} " if provider else ""
    where = f"HTTP {status}" if status is not None else "stream error"
    text = f"{label}{where} ({kind}): {message}".strip()
    return ProviderError(
        kind=kind,
        message=text,
        status=status,
        retry_after=parse_retry_after(retry_after),
        retryable=retryable,
    )


def _kind_for_status(status: int | None) -> ErrorKind:
    if status is None:
        return "server"
    if status in (401, 403):
        return "auth"
    if status == 429:
        return "rate_limit"
    if status in (503, 529):
        return "overloaded"
    if status == 413:
        return "overflow"
    if status >= 500:
        return "server"
    return "invalid_request"


def body_of(raw: bytes) -> Any:
    """An error response body as JSON when it is JSON, else as (trimmed) text."""
    text = raw.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text.strip()[:2000]
