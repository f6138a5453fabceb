"""The fallback model's pure part: which failures send a request to it, and the request's
history made valid for a model that does not think.

A request that still fails after the provider's retries goes to ``fallback_model`` when its
cause is one of ``fallback_on`` (:data:`FALLBACK_CAUSES`, all three by default):

* ``overloaded``: HTTP 529, or an ``overloaded_error`` (Bedrock's and Vertex's overload too,
  as their providers name it);
* ``not_found``: HTTP 404 / ``not_found_error``: the model is unknown to the endpoint or not
  available to this key (retired, a region without it);
* ``server_error``: any other 5xx, or ``api_error``.

A refused request (another 4xx), a rate limit (429: the same key is limited on every model
of the account's tier) or a broken connection does not switch models: another model would
fare no better.

The history sent to the fallback is the one the primary would have got, with one change:
for a model that does not think at all, thinking blocks are left out of every assistant
message but the tool loop the request continues (the API lets a request leave out the
thinking of finished turns). That loop's message is sent as it was received, thinking
included: the API refuses one whose thinking blocks changed, and ignores them when the
request does not turn thinking on (docs/providers.md).

Pure: no I/O.
"""

from __future__ import annotations

from typing import Any, Literal

__all__ = [
    "FALLBACK_CAUSES",
    "FallbackCause",
    "cause_of",
    "without_older_thinking",
]

FallbackCause = Literal["overloaded", "server_error", "not_found"]
"""Why a request may go to the fallback model (``fallback_on``)."""
FALLBACK_CAUSES: tuple[FallbackCause, ...] = ("overloaded", "server_error", "not_found")

_THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})


def cause_of(status: int | None, error_type: str | None) -> FallbackCause | None:
    """Which ``fallback_on`` cause a failure with this HTTP ``status`` and API error type is;
    None for a failure another model would not cure."""
    if status == 529 or error_type == "overloaded_error":
        return "overloaded"
    if status == 404 or error_type == "not_found_error":
        return "not_found"
    if (status is not None and 500 <= status < 600) or error_type == "api_error":
        return "server_error"
    return None


def _calls_tools(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") in ("tool_use", "server_tool_use") for b in content
    )


def without_older_thinking(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with the thinking blocks of every assistant message left out but those of
    a tool loop the request continues (the latest assistant message, when it calls tools). An
    assistant message left with no content keeps a short text in its place, so no message
    disappears and the roles still alternate. The input is not changed."""
    latest = next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "assistant"),
        None,
    )
    if latest is not None and not _calls_tools(messages[latest]):
        latest = None  # a reply that ended its turn: its thinking may be left out too
    out: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        content = message.get("content")
        if index == latest or message.get("role") != "assistant" or not isinstance(content, list):
            out.append(message)
            continue
        kept = [
            b for b in content if not (isinstance(b, dict) and b.get("type") in _THINKING_TYPES)
        ]
        if len(kept) == len(content):
            out.append(message)
            continue
        # A message that only thought (adaptive thinking, then a pause) keeps its place.
        out.append({**message, "content": kept or [{"type": "text", "text": "(thinking)"}]})
    return out
