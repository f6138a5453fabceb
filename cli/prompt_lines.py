"""A prompt of the conversation as a person wrote it, for the lists of prompts a rewind offers
(the terminal UI's and the editor's ``/rewind``)."""

from __future__ import annotations

from typing import Any

__all__ = ["prompt_line"]


def prompt_line(item: dict[str, Any]) -> str:
    """A user message of ``get_history`` as a person wrote it: for a custom command the line
    typed (``/review src/app.py``; its ``text`` is the expansion), else its text."""
    segments = item.get("segments") or []
    first = segments[0] if segments and isinstance(segments[0], dict) else {}
    if first.get("kind") == "workflow_invoke":
        return f"/{first.get('slug', '')} {first.get('arguments', '')}".rstrip()
    return str(item.get("text", ""))
