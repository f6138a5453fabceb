"""Reading a recorded Messages request: the blocks a row's checks look for at its end.

The user's side of a request's end is what follows the last assistant message; an assistant
message holding only server tool results (a pod closing the server calls a paused turn left
open beside its client calls: their results open the next assistant content) sits between
the client results and the new input and does not end it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conformance.server import RecordedRequest

__all__ = ["closes_server_calls", "trailing_user_blocks"]

_SERVER_RESULTS = ("web_search_tool_result", "web_fetch_tool_result")


def closes_server_calls(message: dict[str, Any]) -> bool:
    """An assistant message of server tool results only: how a pod closes server calls a
    paused turn left open beside its client calls (their results open the next assistant
    content), between the client results and the new input."""
    content = message.get("content")
    return (
        isinstance(content, list)
        and bool(content)
        and all(isinstance(b, dict) and b.get("type") in _SERVER_RESULTS for b in content)
    )


def trailing_user_blocks(request: RecordedRequest) -> list[dict[str, Any]]:
    """The content blocks after the last assistant message, in order (roles merged; an
    assistant message closing server calls does not count)."""
    body = request.body if isinstance(request.body, dict) else {}
    blocks: list[dict[str, Any]] = []
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        if message.get("role") == "assistant":
            if not closes_server_calls(message):
                blocks = []
            continue
        content = message.get("content")
        if isinstance(content, str):
            blocks.append({"type": "text", "text": content})
        elif isinstance(content, list):
            blocks.extend(b for b in content if isinstance(b, dict))
    return blocks
