"""What waits for the transcript's disk: the kinds of writes, the broadcasts held behind
them, the batches handed to a writer thread, and the line each write becomes."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from pydantic import BaseModel

from orchestrator.adapters.session import PruneRecord, TurnEndRecord, item_line
from orchestrator.core.history import Item

__all__ = [
    "Batch",
    "Broadcast",
    "Entry",
    "HoldsReplies",
    "ItemWrite",
    "PruneWrite",
    "RecordWrite",
    "TurnEndWrite",
    "Write",
    "line_of",
]


@dataclass(frozen=True, slots=True)
class ItemWrite:
    """A committed item, with its JSON encoded once."""

    item: Item
    encoded: bytes


@dataclass(frozen=True, slots=True)
class TurnEndWrite:
    """A turn's end record."""

    turn: int
    result: str


@dataclass(frozen=True, slots=True)
class PruneWrite:
    """A prune record: what the model's context may drop before a turn."""

    before_turn: int
    prunable_tokens: int


@dataclass(frozen=True, slots=True)
class RecordWrite:
    """Any other session record (a tool's start, a job's)."""

    record: BaseModel


@dataclass(frozen=True, slots=True)
class Broadcast:
    """Something told to clients that waits for the writes committed before it (an event, a
    reply); it is not written."""

    send: Callable[[], None]


@runtime_checkable
class HoldsReplies(Protocol):
    """Where a client's replies go, when it can be told that one is held back for the disk
    (the socket server's client: it reads no more of that client's requests meanwhile, or a
    client that never reads could have any number of replies built for it when the disk
    catches up, none of them counted by its bounds until then)."""

    def hold(self, size: int | None = None) -> Callable[[], None]:
        """Count one held reply: ``size`` bytes of a line already built, or (None) one built
        when it is sent, of a size nobody knows yet; the returned function is called once it
        is sent."""
        ...


Write = ItemWrite | TurnEndWrite | PruneWrite | RecordWrite
Entry = Write | Broadcast


@dataclass(slots=True)
class Batch:
    """Records handed to a writer thread together: one write and one sync."""

    entries: list[Entry]
    future: Future[None] = field(default_factory=Future)


def line_of(write: Write) -> bytes:
    """The session-file line a write becomes."""
    if isinstance(write, ItemWrite):
        return item_line(write.encoded)
    if isinstance(write, TurnEndWrite):
        return TurnEndRecord(turn=write.turn, result=write.result).model_dump_json().encode()
    if isinstance(write, PruneWrite):
        record = PruneRecord(before_turn=write.before_turn, prunable_tokens=write.prunable_tokens)
        return record.model_dump_json().encode()
    return write.record.model_dump_json().encode()
