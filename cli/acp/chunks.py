"""The updates an ACP session sends of the agent's words: answer and thought chunks, and the
union of the ``session/update`` payloads the pod sends (shared by :mod:`cli.acp.mapping`
and :mod:`cli.acp.web`)."""

from __future__ import annotations

from acp import schema

__all__ = ["SessionUpdate", "message_chunk", "thought_chunk"]

SessionUpdate = (
    schema.UserMessageChunk
    | schema.AgentMessageChunk
    | schema.AgentThoughtChunk
    | schema.ToolCallStart
    | schema.ToolCallProgress
    | schema.AvailableCommandsUpdate
)


def message_chunk(text: str) -> schema.AgentMessageChunk:
    """Text of the agent's answer."""
    return schema.AgentMessageChunk(
        session_update="agent_message_chunk",
        content=schema.TextContentBlock(type="text", text=text),
    )


def thought_chunk(text: str) -> schema.AgentThoughtChunk:
    """Text of the agent's thinking (and the pod's warnings, shown beside it)."""
    return schema.AgentThoughtChunk(
        session_update="agent_thought_chunk",
        content=schema.TextContentBlock(type="text", text=text),
    )
