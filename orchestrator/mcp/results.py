"""What an MCP tool's result becomes for the model, and which MCP tools the model sees (pure).

A result's content blocks become our tool result: text as it is, an embedded text resource
under its URI, an image the API takes (PNG, JPEG, GIF, WebP up to 5 MB) as an image block the
model sees, and other binary content (audio, blobs, other images) as a line that names it.
``isError`` becomes ``is_error``. The summary says which server and tool answered and how much, so what
survives pruning still tells the story.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mcp import types

from orchestrator.images import IMAGE_MAX_BYTES, IMAGE_MEDIA_TYPES, ImageData
from orchestrator.mcp.config import MAX_TOOL_NAME, wire_name
from orchestrator.tools.base import ToolOutput


def _content_text(block: Any) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            return f"[resource {resource.uri}]\n{resource.text}"
        size = len(resource.blob) * 3 // 4
        return (
            f"[resource {resource.uri}: {resource.mime_type or 'binary'}, {size} bytes, not shown]"
        )
    if isinstance(block, types.ResourceLink):
        return f"[link: {block.uri}{f' ({block.description})' if block.description else ''}]"
    if isinstance(block, types.ImageContent | types.AudioContent):
        size = len(block.data) * 3 // 4
        return f"[{block.type}: {block.mime_type}, {size} bytes, not shown]"
    return f"[{getattr(block, 'type', 'unknown')} content, not shown]"


def _image(block: Any) -> ImageData | None:
    """An MCP image the Messages API takes, as our image; None for anything else."""
    if not isinstance(block, types.ImageContent) or block.mime_type not in IMAGE_MEDIA_TYPES:
        return None
    if len(block.data) * 3 // 4 > IMAGE_MAX_BYTES:
        return None
    return ImageData(media_type=block.mime_type, data=block.data)


def tool_output(server: str, tool: str, result: types.CallToolResult) -> ToolOutput:
    """Our tool result for an MCP ``CallToolResult``."""
    images: list[ImageData] = []
    parts: list[str] = []
    for block in result.content:
        image = _image(block)
        if image is None:
            parts.append(_content_text(block))
        else:
            images.append(image)
            parts.append(f"[image {len(images)}: {image.media_type}, attached]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=1))
    text = "\n".join(parts)
    lines = text.count("\n") + 1 if text else 0
    where = f"mcp {server}/{tool}"
    if result.is_error:
        first = text.splitlines()[0][:200] if text else "no message"
        return ToolOutput(summary=f"{where} failed: {first}", content=text or None, is_error=True)
    shown = f", {len(images)} image{'s' if len(images) != 1 else ''}" if images else ""
    return ToolOutput(
        summary=f"{where}: {lines} lines{shown}", content=text or None, images=tuple(images)
    )


TASK_ONLY = (
    "it runs only as a task (execution.taskSupport = required), which the pod does not support yet"
)
"""Why a task-augmented tool is not offered: every call of it would fail."""


@dataclass(frozen=True)
class Offer:
    """One MCP tool as the model is offered it, or why it is not."""

    server: str
    tool: types.Tool
    name: str
    problem: str | None = None


def offers(
    server: str, tools: Iterable[types.Tool], *, allow: list[str], deny: list[str]
) -> list[Offer]:
    """The server's tools to offer (by its allow and deny lists), each checked for a usable
    name and an object schema; a tool that fails a check carries the reason instead."""
    out: list[Offer] = []
    for tool in tools:
        if (allow and tool.name not in allow) or tool.name in deny:
            continue
        name = wire_name(server, tool.name)
        schema = tool.input_schema
        problem = None
        if len(name) > MAX_TOOL_NAME:
            problem = f"its name {name} is longer than {MAX_TOOL_NAME} characters"
        elif not isinstance(schema, dict) or schema.get("type") != "object":
            problem = "its input schema is not a JSON Schema object"
        elif tool.execution is not None and tool.execution.task_support == "required":
            problem = TASK_ONLY
        out.append(Offer(server, tool, name, problem))
    return out
