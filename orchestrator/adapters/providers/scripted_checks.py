"""The scripted provider's bookkeeping of what came back: its request log's lines, its
stand-in thinking signatures and the check that signed thinking returns unchanged, and the
deterministic compaction summary it writes."""

from __future__ import annotations

import hashlib
from typing import Any

from orchestrator.adapters.providers.base import ProviderRequest

__all__ = ["changed_thinking", "request_record", "scripted_summary", "sign_thinking"]


def request_record(request: ProviderRequest, refused: str | None) -> dict[str, Any]:
    """What the request log holds for one request: its purpose, whether it turned thinking
    on, how many ``thinking`` / ``redacted_thinking`` blocks its assistant messages carried
    back, its message count, and why it was refused (None when it was answered)."""
    sent_back = sum(
        1
        for message in request.messages
        if message.get("role") == "assistant" and isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") in ("thinking", "redacted_thinking")
    )
    return {
        "purpose": request.purpose,
        "thinking": request.thinking is not None and request.thinking["type"] != "disabled",
        "thinking_sent_back": sent_back,
        "messages": len(request.messages),
        "refused": refused,
    }


def sign_thinking(thinking: str) -> str:
    """A stand-in signature: derived from the text, so a changed block is visible."""
    return "scripted-" + hashlib.sha256(thinking.encode()).hexdigest()[:16]


def changed_thinking(messages: list[dict[str, Any]]) -> str | None:
    """Why the request would be refused for a thinking block it signed that came back changed
    (as the API refuses one); None when every such block is intact."""
    for index, message in enumerate(messages):
        content = message.get("content")
        if message.get("role") != "assistant" or not isinstance(content, list):
            continue  # only the model's own turns carry thinking blocks
        for position, block in enumerate(content):
            signature = str(block.get("signature", ""))
            ours = block.get("type") == "thinking" and signature.startswith("scripted-")
            if ours and signature != sign_thinking(str(block.get("thinking", ""))):
                return (
                    f"messages.{index}.content.{position}: `thinking` blocks cannot be "
                    "modified. These blocks must remain as they were in the original response."
                )
    return None


def scripted_summary(request: ProviderRequest) -> str:
    """A deterministic summary of a compaction request: what the user asked, in order."""
    asks: list[str] = []
    for message in request.messages:
        if message["role"] != "user":
            continue
        for block in message["content"]:
            text = block.get("text", "") if isinstance(block, dict) else ""
            # Pod-made text (file bodies, notes, the compaction request) starts with "[".
            if text and not text.startswith("["):
                asks.append(" ".join(text.split())[:120])
    lines = [f"- {ask}" for ask in asks[-20:]] or ["- (no user requests)"]
    return (
        f"Scripted summary of {len(request.messages)} messages (offline provider).\n"
        "User requests, oldest first:\n" + "\n".join(lines)
    )
