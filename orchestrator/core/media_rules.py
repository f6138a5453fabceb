"""The validator's rules for images and documents (``bad_image``, ``bad_document``), checked
at the top of a message and inside a tool result's content."""

from __future__ import annotations

from typing import Any

from orchestrator.core.documents import PDF_MEDIA_TYPE
from orchestrator.core.images import IMAGE_MEDIA_TYPES

__all__ = ["media_problems"]


def _well_formed_image(source: object) -> bool:
    if isinstance(source, dict) and source.get("type") == "url":
        return isinstance(source.get("url"), str) and bool(source["url"])
    return (
        isinstance(source, dict)
        and source.get("type") == "base64"
        and source.get("media_type") in IMAGE_MEDIA_TYPES
        and isinstance(source.get("data"), str)
        and bool(source["data"])
    )


def _well_formed_document(source: object) -> bool:
    if not isinstance(source, dict):
        return False
    kind = source.get("type")
    data = source.get("data")
    if kind == "base64":
        return source.get("media_type") == PDF_MEDIA_TYPE and isinstance(data, str) and bool(data)
    if kind == "text":
        return source.get("media_type") == "text/plain" and isinstance(data, str)
    if kind == "url":
        return isinstance(source.get("url"), str) and bool(source["url"])
    if kind == "content":
        return isinstance(source.get("content"), str | list)
    if kind == "file":
        return isinstance(source.get("file_id"), str) and bool(source["file_id"])
    return False


def media_problems(block: dict[str, Any]) -> list[tuple[str, str]]:
    """The (rule, message) of an image or document block the API would refuse, at the top of
    a message or inside a tool result's content."""
    kind = block.get("type")
    if kind == "tool_result" and isinstance(block.get("content"), list):
        inner = [b for b in block["content"] if isinstance(b, dict)]
        return [v for b in inner if b.get("type") != "tool_result" for v in media_problems(b)]
    if kind == "image" and not _well_formed_image(block.get("source")):
        return [
            (
                "bad_image",
                "an image needs a URL or a base64 source of image/png, image/jpeg, "
                "image/gif or image/webp with data",
            )
        ]
    if kind == "document" and not _well_formed_document(block.get("source")):
        return [
            (
                "bad_document",
                "a document needs a base64 source of application/pdf with data, a text source "
                "of text/plain, a URL, content or a file id",
            )
        ]
    return []
