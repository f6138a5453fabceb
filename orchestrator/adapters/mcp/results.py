"""What an MCP tool's result becomes for the model, and which MCP tools the model sees (pure).

A result's content blocks become our tool result: text as it is, an embedded text resource
under its URI, an image the API takes (PNG, JPEG, GIF, WebP up to 5 MB; an image block or an
embedded blob) as an image block the model sees, an embedded PDF the API takes
(:mod:`orchestrator.core.documents`) as a document block, and other binary content (audio, other
blobs, other images) as a line that names it, and why when it is a PDF. A blob whose MIME
type says text is decoded and read as text (:mod:`.blob_text`).
``isError`` becomes ``is_error``. The summary says which server and tool answered and how much, so what
survives pruning still tells the story.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mcp import types

from orchestrator.adapters.mcp.blob_text import blob_text
from orchestrator.capabilities.tools.base import ToolOutput
from orchestrator.config.mcp import MAX_TOOL_NAME, wire_name
from orchestrator.core.documents import (
    PDF_MAX_BYTES,
    PDF_MAX_PAGES,
    PDF_MEDIA_TYPE,
    DocumentData,
    DocumentRefused,
    base64_size,
    pdf_from_base64,
)
from orchestrator.core.images import IMAGE_MAX_BYTES, IMAGE_MEDIA_TYPES, ImageData


@dataclass
class Attachments:
    """The images and PDFs one result attaches, in order; together its PDFs keep to the
    limits one PDF does, so a result never makes a request the API refuses."""

    images: list[ImageData] = field(default_factory=list)
    documents: list[DocumentData] = field(default_factory=list)

    def blob(self, uri: str, mime_type: str | None, blob: str) -> str:
        """The line that stands for a binary resource in the text, attaching it when the API
        takes it (an image, a PDF) and naming it otherwise."""
        text = blob_text(uri, mime_type, blob)
        if text is not None:  # text sent as a blob (text/plain, JSON…): read as text
            return text
        size = base64_size(blob)
        kind = mime_type or "binary"
        if kind in IMAGE_MEDIA_TYPES and size <= IMAGE_MAX_BYTES and _decodes(blob):
            self.images.append(ImageData(media_type=kind, data=blob))
            return f"[resource {uri}: image {len(self.images)}, {kind}, attached]"
        if kind == PDF_MEDIA_TYPE:
            try:
                document = self._fits(pdf_from_base64(blob))
            except DocumentRefused as refused:
                return f"[resource {uri}: {kind}, {size} bytes, not shown: {refused}]"
            self.documents.append(document)
            pages = f"{document.pages} page{'s' if document.pages != 1 else ''}"
            return f"[resource {uri}: document {len(self.documents)}, {kind}, {pages}, attached]"
        return f"[resource {uri}: {kind}, {size} bytes, not shown]"

    def _fits(self, document: DocumentData) -> DocumentData:
        pages = sum(d.pages for d in self.documents) + document.pages
        size = sum(base64_size(d.data) for d in self.documents) + base64_size(document.data)
        if pages > PDF_MAX_PAGES or size > PDF_MAX_BYTES:
            raise DocumentRefused(
                f"with the PDFs before it in this result it passes what one request can carry "
                f"({PDF_MAX_PAGES} pages, {PDF_MAX_BYTES / 1e6:.0f} MB of PDF)"
            )
        return document

    def shown(self) -> str:
        """``, 1 image, 2 documents`` for a summary; empty when nothing is attached."""
        counts = [(len(self.images), "image"), (len(self.documents), "document")]
        return "".join(f", {n} {noun}{'s' if n != 1 else ''}" for n, noun in counts if n)


def _decodes(blob: str) -> bool:
    try:
        base64.b64decode(blob, validate=True)
    except (ValueError, binascii.Error):
        return False
    return True


def _content_text(block: Any, attachments: Attachments) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            return f"[resource {resource.uri}]\n{resource.text}"
        return attachments.blob(str(resource.uri), resource.mime_type, resource.blob)
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
    attachments = Attachments()
    images = attachments.images
    parts: list[str] = []
    for block in result.content:
        image = _image(block)
        if image is None:
            parts.append(_content_text(block, attachments))
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
    return ToolOutput(
        summary=f"{where}: {lines} lines{attachments.shown()}",
        content=text or None,
        images=tuple(images),
        documents=tuple(attachments.documents),
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
