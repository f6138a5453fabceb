"""The JSON-lines wire protocol between clients and a pod.

One JSON object per line, UTF-8. A client sends ``{"method", "params", "id"}``; the pod sends
``{"event", "data"}``. Every message has a pydantic model here, so the JSON Schema printed by
``pod protocol schema`` is the one the code enforces.

Modules: :mod:`.requests` (client to pod), :mod:`.events` (pod to client: the event table
and its line format), whose data models live in :mod:`.pod_state` (the pod as it stands) and
:mod:`.turn_stream` (the stream of a turn) on the base :mod:`.data`.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from orchestrator.core.segments import Segment
from orchestrator.protocol.events import (
    EVENT_DATA,
    AlertData,
    ApprovalRequestData,
    ApprovalResolvedData,
    ChildData,
    CitationData,
    CompactionData,
    ContextData,
    ElicitationRequestData,
    ElicitationResolvedData,
    ErrorCode,
    ErrorData,
    Event,
    EventName,
    FileCompletionsData,
    ForkedData,
    HistoryData,
    HookData,
    JobData,
    McpServerData,
    RewindData,
    RewindFilesData,
    RunEndData,
    RunResult,
    ServerToolCallData,
    ServerToolResultData,
    ShutdownData,
    SourceData,
    StatusData,
    SystemNoteData,
    TextData,
    ThinkingData,
    ToolCallArgsDeltaData,
    ToolCallDoneData,
    ToolCallStartData,
    ToolOutputDeltaData,
    ToolResultData,
    TurnEndData,
    TurnPhase,
    TurnStartData,
    UsageData,
    UserMessageData,
    WebData,
    WebWhyData,
    decode_event,
    encode_event,
)
from orchestrator.protocol.requests import (
    MAX_LINE_BYTES,
    PARAMS_BY_METHOD,
    AnswerElicitationParams,
    ApproveParams,
    CompactParams,
    CompleteFilesParams,
    DenyParams,
    ForkParams,
    KillJobParams,
    MethodName,
    NoParams,
    NotifyParams,
    PodEventParams,
    ProtocolError,
    Request,
    RewindParams,
    RunParams,
    parse_request,
)

__all__ = [
    "EVENT_DATA",
    "MAX_LINE_BYTES",
    "PARAMS_BY_METHOD",
    "AlertData",
    "AnswerElicitationParams",
    "ApprovalRequestData",
    "ApprovalResolvedData",
    "ApproveParams",
    "ChildData",
    "CitationData",
    "CompactParams",
    "CompactionData",
    "CompleteFilesParams",
    "ContextData",
    "DenyParams",
    "ElicitationRequestData",
    "ElicitationResolvedData",
    "ErrorCode",
    "ErrorData",
    "Event",
    "EventName",
    "FileCompletionsData",
    "ForkParams",
    "ForkedData",
    "HistoryData",
    "HookData",
    "JobData",
    "KillJobParams",
    "McpServerData",
    "MethodName",
    "NoParams",
    "NotifyParams",
    "PodEventParams",
    "ProtocolError",
    "Request",
    "RewindData",
    "RewindFilesData",
    "RewindParams",
    "RunEndData",
    "RunParams",
    "RunResult",
    "ServerToolCallData",
    "ServerToolResultData",
    "ShutdownData",
    "SourceData",
    "StatusData",
    "SystemNoteData",
    "TextData",
    "ThinkingData",
    "ToolCallArgsDeltaData",
    "ToolCallDoneData",
    "ToolCallStartData",
    "ToolOutputDeltaData",
    "ToolResultData",
    "TurnEndData",
    "TurnPhase",
    "TurnStartData",
    "UsageData",
    "UserMessageData",
    "WebData",
    "WebWhyData",
    "decode_event",
    "encode_event",
    "parse_request",
    "protocol_schema",
]


def protocol_schema() -> dict[str, Any]:
    """JSON Schema for every method's params and every event's data."""
    return {
        "title": "pod-orchestrator protocol",
        "request": Request.model_json_schema(),
        "methods": {name: model.model_json_schema() for name, model in PARAMS_BY_METHOD.items()},
        "events": {
            name: model.model_json_schema(by_alias=True) for name, model in EVENT_DATA.items()
        },
        "segment": TypeAdapter(Segment).json_schema(),
    }
