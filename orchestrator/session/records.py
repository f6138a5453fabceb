"""What a session file holds: the header and the record types, one JSON line each."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

SESSION_VERSION = 1


class SessionHeader(BaseModel):
    """First line of a session file."""

    model_config = ConfigDict(extra="allow")

    type: Literal["session"] = "session"
    version: int = SESSION_VERSION
    pod: str
    workspace: str
    created_ms: int


class ItemRecord(BaseModel):
    """A committed history item."""

    type: Literal["item"] = "item"
    item: dict[str, Any]


class TurnEndRecord(BaseModel):
    """A turn closed for good."""

    type: Literal["turn_end"] = "turn_end"
    turn: int
    result: str


class PruneRecord(BaseModel):
    """Requests from now on send only summaries for tool results of turns before ``before_turn``."""

    type: Literal["prune"] = "prune"
    before_turn: int
    prunable_tokens: int = 0


class ToolStartRecord(BaseModel):
    """A tool call with side effects is about to start (written and synced before it does).

    On load, a start without a result means the pod died while the call ran: the call is
    closed with a result that says so, and Resume never runs it again.
    """

    type: Literal["tool_start"] = "tool_start"
    call_id: str
    name: str
    started_ms: int
    spool: str | None = None
    """File (beside the session) that the call's output is copied to while it runs."""


class TitleRecord(BaseModel):
    """A title a person gave the session (the latest one counts)."""

    type: Literal["title"] = "title"
    title: str


Record = Annotated[
    ItemRecord | TurnEndRecord | PruneRecord | ToolStartRecord | TitleRecord,
    Field(discriminator="type"),
]
RECORD: TypeAdapter[Record] = TypeAdapter(Record)
