"""What clients are told of an item once it is on disk: the events that announce it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict

from pydantic import BaseModel

from orchestrator.core.history import (
    AssistantMessage,
    Compaction,
    Item,
    ServerToolResultBlock,
    TextBlock,
    ToolResult,
    ToolUseBlock,
    UserMessage,
)
from orchestrator.core.server_tools import cited_source, summarize_result
from orchestrator.protocol import (
    CitationData,
    CompactionData,
    ServerToolResultData,
    SystemNoteData,
    TextData,
    ToolCallDoneData,
    ToolCallStartData,
    ToolResultData,
    UserMessageData,
)
from orchestrator.protocol.filling import to_data

__all__ = ["item_events"]


def item_events(stored: Item) -> Iterator[tuple[str, BaseModel]]:
    """The events announcing ``stored``, in order: its user message, its text and tool calls,
    its tool result, its compaction or its system note."""
    if isinstance(stored, UserMessage):
        yield ("user_message", to_data(UserMessageData, stored))
    elif isinstance(stored, AssistantMessage):
        for block in stored.blocks:
            if isinstance(block, TextBlock):
                sources = [cited_source(c) for c in block.citations or []]
                cited = [CitationData(**asdict(c)) for c in sources] or None
                yield ("text_done", TextData(text=block.text, seq=stored.seq, citations=cited))
            elif isinstance(block, ServerToolResultBlock) and stored.synthetic:
                # The pod closed a server call the API never answered (docs/web.md): the call
                # a client shows as running gets its end. Real results were told as streamed.
                summary = summarize_result(block)
                yield (
                    "server_tool_result",
                    ServerToolResultData(
                        id=block.tool_use_id,
                        name=summary.name,
                        sources=[],
                        error_code=summary.error_code,
                    ),
                )
            elif isinstance(block, ToolUseBlock):
                if stored.synthetic:
                    yield ("tool_call_start", ToolCallStartData(id=block.id, name=block.name))
                yield (
                    "tool_call_done",
                    ToolCallDoneData(
                        id=block.id, name=block.name, arguments=block.input, seq=stored.seq
                    ),
                )
    elif isinstance(stored, ToolResult):
        yield (
            "tool_result",
            to_data(ToolResultData, stored, id=stored.call_id),
        )
    elif isinstance(stored, Compaction):
        yield (
            "compaction",
            to_data(
                CompactionData,
                stored,
                files=[f.path for f in stored.files],
                todos=stored.open_todos,
            ),
        )
    else:
        yield (
            "system_note",
            to_data(SystemNoteData, stored),
        )
