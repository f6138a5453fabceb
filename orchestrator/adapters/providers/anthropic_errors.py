"""Maps what the Anthropic SDK raises onto our :class:`~orchestrator.adapters.providers.base.ProviderError` tree.

Each failed attempt becomes a :class:`Failure`: the typed error to raise, whether trying again
may help (429, 408, 5xx, 529, retryable stream error types, broken connections), a short
reason for the retry alert, and the wait the server asked for in ``retry-after-ms`` or
``retry-after``. The retry loop itself stays in :mod:`orchestrator.adapters.providers.anthropic`.
"""

from __future__ import annotations

import email.utils
import time
from dataclasses import dataclass

import anthropic
import httpx2  # the SDK's transport; its headers type is what responses carry

from orchestrator.adapters.providers.base import (
    PromptTooLongError,
    ProviderError,
    ProviderRejectedError,
    ProviderStreamError,
    is_prompt_too_long,
)

_RETRYABLE_STATUSES = frozenset({408, 429})
_RETRYABLE_ERROR_TYPES = frozenset({"overloaded_error", "rate_limit_error", "api_error"})
_STATUS_LABELS = {408: "request timeout", 429: "rate limited", 529: "overloaded"}


@dataclass(slots=True)
class Failure:
    """A classified failed attempt: what to raise, and whether trying again may help."""

    error: ProviderError
    retryable: bool
    reason: str
    retry_after: float | None = None


def _retry_after(headers: httpx2.Headers) -> float | None:
    """Seconds the server asked us to wait, from ``retry-after-ms`` or ``retry-after``."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_tz(value)
        if parsed is None:
            return None
        return max(0.0, email.utils.mktime_tz(parsed) - time.time())


def _status_label(status: int) -> str:
    return _STATUS_LABELS.get(status, "server error" if status >= 500 else "error")


def classify_status(err: anthropic.APIStatusError, error_type: str | None = None) -> Failure:
    """An HTTP error response (received before any event was streamed); ``error_type``: the
    API's name for it, when the provider read one its own way (a cloud platform's)."""
    status = err.status_code
    error_type = error_type or err.type
    message = err.api_message or str(err)
    if status in _RETRYABLE_STATUSES or status >= 500:
        reason = f"provider returned {status} {_status_label(status)}"
        return Failure(
            ProviderError(
                f"{reason}: {message}", status=status, retryable=True, error_type=error_type
            ),
            retryable=True,
            reason=reason,
            retry_after=_retry_after(err.response.headers),
        )
    kind = PromptTooLongError if is_prompt_too_long(status, message) else ProviderRejectedError
    return Failure(
        kind(
            f"provider rejected the request ({status}): {message}",
            status=status,
            error_type=error_type,
        ),
        retryable=False,
        reason=f"provider returned {status}",
    )


def classify_stream_error(err: anthropic.APIStatusError, error_type: str | None = None) -> Failure:
    """An SSE ``error`` event: the HTTP status was 200, the error type says what broke."""
    error_type = error_type or err.type or "error"
    message = err.api_message or str(err)
    reason = f"provider stream failed with {error_type}"
    return Failure(
        ProviderStreamError(f"{reason}: {message}", error_type=error_type),
        retryable=error_type in _RETRYABLE_ERROR_TYPES,
        reason=reason,
    )


def classify_transport(err: Exception) -> Failure:
    """A connection that failed, timed out or was cut."""
    detail = str(err) or type(err).__name__
    cause = err.__cause__
    if isinstance(err, anthropic.APIConnectionError) and cause is not None:
        detail = f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__
    elif not isinstance(err, anthropic.APIConnectionError):
        detail = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    reason = f"connection to provider failed ({detail})"
    return Failure(ProviderStreamError(reason), retryable=True, reason=reason)
