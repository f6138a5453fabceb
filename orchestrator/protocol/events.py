"""Pod to client: event names, their data models, and encoding and decoding one line.

The data models live by what they describe: :mod:`.pod_state` (the pod as it stands) and
:mod:`.turn_stream` (the stream of a turn), on the base :mod:`.data`; this module names
them all, so ``from orchestrator.protocol.events import …`` finds every one.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
)

from orchestrator.protocol.commands import CommandData, CommandsData
from orchestrator.protocol.data import EventData
from orchestrator.protocol.pod_state import (
    ApprovalRequestData,
    ApprovalResolvedData,
    BudgetData,
    ChildData,
    ClientIoRequestData,
    CompactionData,
    ContextData,
    ElicitationRequestData,
    ElicitationResolvedData,
    FileCompletionsData,
    ForkedData,
    HistoryData,
    HookData,
    JobData,
    McpServerData,
    ModelChoiceData,
    ModelsData,
    RewindData,
    RewindFilesData,
    ShutdownData,
    StatusData,
    TodoData,
    TodosData,
    TurnPhase,
    WebData,
    WebWhyData,
)
from orchestrator.protocol.stats import StatsData, TurnStatsData
from orchestrator.protocol.turn_stream import (
    AlertData,
    CitationData,
    ErrorCode,
    ErrorData,
    ResyncData,
    RunEndData,
    RunResult,
    ServerToolCallData,
    ServerToolResultData,
    SourceData,
    SystemNoteData,
    TextData,
    ThinkingData,
    ToolCallArgsDeltaData,
    ToolCallDoneData,
    ToolCallStartData,
    ToolOutputDeltaData,
    ToolResultData,
    TurnEndData,
    TurnStartData,
    UsageData,
    UserMessageData,
)

__all__ = [
    "EVENT_DATA",
    "AlertData",
    "ApprovalRequestData",
    "ApprovalResolvedData",
    "BudgetData",
    "ChildData",
    "CitationData",
    "ClientIoRequestData",
    "CommandData",
    "CommandsData",
    "CompactionData",
    "ContextData",
    "ElicitationRequestData",
    "ElicitationResolvedData",
    "ErrorCode",
    "ErrorData",
    "Event",
    "EventData",
    "EventName",
    "FileCompletionsData",
    "ForkedData",
    "HistoryData",
    "HookData",
    "JobData",
    "McpServerData",
    "ModelChoiceData",
    "ModelsData",
    "ResyncData",
    "RewindData",
    "RewindFilesData",
    "RunEndData",
    "RunResult",
    "ServerToolCallData",
    "ServerToolResultData",
    "ShutdownData",
    "SourceData",
    "StatsData",
    "StatusData",
    "SystemNoteData",
    "TextData",
    "ThinkingData",
    "TodoData",
    "TodosData",
    "ToolCallArgsDeltaData",
    "ToolCallDoneData",
    "ToolCallStartData",
    "ToolOutputDeltaData",
    "ToolResultData",
    "TurnEndData",
    "TurnPhase",
    "TurnStartData",
    "TurnStatsData",
    "UsageData",
    "UserMessageData",
    "WebData",
    "WebWhyData",
    "decode_event",
    "encode_event",
]

EVENT_DATA: dict[str, type[EventData]] = {
    "status": StatusData,
    "user_message": UserMessageData,
    "turn_start": TurnStartData,
    "text_delta": TextData,
    "text_done": TextData,
    "thinking_delta": ThinkingData,
    "tool_call_start": ToolCallStartData,
    "tool_call_args_delta": ToolCallArgsDeltaData,
    "server_tool_call": ServerToolCallData,
    "server_tool_result": ServerToolResultData,
    "citation": CitationData,
    "tool_output_delta": ToolOutputDeltaData,
    "tool_call_done": ToolCallDoneData,
    "tool_result": ToolResultData,
    "system_note": SystemNoteData,
    "compaction": CompactionData,
    "rewind_preview": RewindData,
    "rewound": RewindData,
    "forked": ForkedData,
    "approval_request": ApprovalRequestData,
    "approval_resolved": ApprovalResolvedData,
    "elicitation_request": ElicitationRequestData,
    "elicitation_resolved": ElicitationResolvedData,
    "usage": UsageData,
    "turn_end": TurnEndData,
    "run_end": RunEndData,
    "error": ErrorData,
    "alert": AlertData,
    "history": HistoryData,
    "file_completions": FileCompletionsData,
    "shutdown": ShutdownData,
    "child": ChildData,
    "todos": TodosData,
    "models": ModelsData,
    "client_io_request": ClientIoRequestData,
    "commands": CommandsData,
    "resync": ResyncData,
    "stats": StatsData,
}

EventName = Literal[
    "status",
    "user_message",
    "turn_start",
    "text_delta",
    "text_done",
    "thinking_delta",
    "tool_call_start",
    "tool_call_args_delta",
    "server_tool_call",
    "server_tool_result",
    "citation",
    "tool_output_delta",
    "tool_call_done",
    "tool_result",
    "system_note",
    "compaction",
    "rewind_preview",
    "rewound",
    "forked",
    "approval_request",
    "approval_resolved",
    "elicitation_request",
    "elicitation_resolved",
    "usage",
    "turn_end",
    "run_end",
    "error",
    "alert",
    "history",
    "file_completions",
    "shutdown",
    "child",
    "todos",
    "models",
    "client_io_request",
    "commands",
    "resync",
    "stats",
]


class Event(BaseModel):
    """One pod line: an event name, its data, and its id when it went to every client."""

    model_config = ConfigDict(extra="forbid")

    eid: str | None = None
    """``"<epoch>-<n>"`` on every broadcast event; absent on a reply to one client."""

    event: EventName
    data: dict[str, Any] = Field(default_factory=dict)


def encode_event(event: str, data: BaseModel | dict[str, Any] | None = None) -> bytes:
    """One event as a JSON line; the hot path for deltas, so it avoids revalidation."""
    if isinstance(data, BaseModel):
        payload: dict[str, Any] = data.model_dump(mode="json", by_alias=True, exclude_none=False)
        if "id" in payload and payload["id"] is None and event != "error":
            del payload["id"]
        if payload.get("seq", 0) is None:
            del payload["seq"]  # deltas carry no seq; keep them small
    else:
        payload = data or {}
    text = json.dumps({"event": event, "data": payload}, ensure_ascii=False) + "\n"
    # Text from the file system can carry surrogate escapes (undecodable names); written as a
    # JSON \\u escape it stays valid UTF-8 instead of failing the whole event.
    return text.encode("utf-8", "backslashreplace")


def decode_event(line: bytes | str) -> Event:
    """Parse and validate one pod line (used by clients and tests)."""
    event = Event.model_validate_json(line)
    EVENT_DATA[event.event].model_validate(event.data)
    return event
