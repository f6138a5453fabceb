"""What clients are told of an item once it is on disk: the events that announce it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict

from pydantic import BaseModel

from orchestrator.core.history import (
    AssistantMessage,
    Compaction,
    Item,
    TextBlock,
    ToolResult,
    ToolUseBlock,
    UserMessage,
)
from orchestrator.core.server_tools import cited_source
from orchestrator.protocol import (
    CitationData,
    CompactionData,
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
            to_data(CompactionData, stored, files=[f.path for f in stored.files]),
        )
    else:
        yield (
            "system_note",
            to_data(SystemNoteData, stored),
        )
