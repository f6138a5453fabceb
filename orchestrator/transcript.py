"""The transcript: history, session file and broadcast, the one place an item becomes saved and
visible.

An item is committed in three steps, always in this order: it is written (whole, synced) to
the session file, appended to the in-memory history, and announced to clients. A client never
hears of an item that is not on disk.

When the disk refuses a write (full, I/O error), the record waits in memory, in order, and so
does everything committed after it: nothing is in history or announced until it is on disk.
Each later commit tries again, so the pod recovers by itself once space is free. Code that must
not go on without durability (sending a request, starting a tool with side effects) calls
:meth:`Transcript.require_durable`, which raises :class:`SessionWriteError`; the machine's
history surgery just commits, and its records wait with the rest.
"""

from __future__ import annotations

import json
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from orchestrator.history import (
    AssistantMessage,
    Compaction,
    History,
    Item,
    TextBlock,
    ToolResult,
    ToolUseBlock,
    UserMessage,
    encode_item,
)
from orchestrator.protocol import (
    AlertData,
    CompactionData,
    SystemNoteData,
    TextData,
    ToolCallDoneData,
    ToolCallStartData,
    ToolResultData,
    UserMessageData,
    encode_event,
)
from orchestrator.session import SessionWriteError, SessionWriter, ToolStartRecord

log = logging.getLogger(__name__)

Send = Callable[[bytes], None]


@dataclass(frozen=True, slots=True)
class _ItemWrite:
    item: Item
    encoded: bytes


@dataclass(frozen=True, slots=True)
class _TurnEndWrite:
    turn: int
    result: str


@dataclass(frozen=True, slots=True)
class _PruneWrite:
    before_turn: int
    prunable_tokens: int


@dataclass(frozen=True, slots=True)
class _RecordWrite:
    record: BaseModel


_Write = _ItemWrite | _TurnEndWrite | _PruneWrite | _RecordWrite


class Transcript:
    """Commits items (disk, then history, then clients) and broadcasts events."""

    def __init__(
        self,
        *,
        history: History,
        session: SessionWriter,
        broadcast: Send,
        clean_result: Callable[[ToolResult], ToolResult] | None = None,
        item_json: list[bytes] | None = None,
    ) -> None:
        """``item_json``: each item of ``history`` encoded (:func:`encode_item`), in order,
        when the caller has it already (a reload reuses its session lines)."""
        self.history = history
        self.session = session
        self.broadcast = broadcast
        self.clean_result = clean_result
        """Applied to every tool result before it is committed (known secrets redacted)."""
        self.startup_alerts: list[dict[str, Any]] = []
        self.serving = False
        """Set once clients can connect; alerts raised before then are kept for them."""
        """Alerts raised while the pod was being built, for the ``history`` reply."""
        self.write_error: SessionWriteError | None = None
        """The last failed write, while records are waiting for the disk."""
        self._waiting: deque[_Write] = deque()
        if item_json is None:
            item_json = [encode_item(item) for item in history.items]
        elif len(item_json) != len(history.items):
            raise ValueError(f"{len(item_json)} item texts for {len(history.items)} items")
        self._item_json: list[bytes] = item_json

    # -- committing -------------------------------------------------------------------------

    def commit(self, item: Item) -> Item:
        """Number the item and write it; it is in history and announced once it is on disk.

        Returns the numbered item, whether or not the disk took it yet (see
        :attr:`write_error`); a caller that needs it durable calls :meth:`require_durable`.
        """
        if self.clean_result is not None and isinstance(item, ToolResult):
            item = self.clean_result(item)
        stored = self.history.stamp(item)
        self._waiting.append(_ItemWrite(stored, encode_item(stored)))
        self.flush()
        return stored

    def end_turn(self, turn: int, result: str) -> None:
        """Record that a turn closed for good."""
        self._waiting.append(_TurnEndWrite(turn, result))
        self.flush()

    def record_prune(self, before_turn: int, prunable_tokens: int) -> None:
        """Record that the prune bound moved."""
        self._waiting.append(_PruneWrite(before_turn, prunable_tokens))
        self.flush()

    def keep(self, record: BaseModel) -> None:
        """Write a record that must not be lost but need not hold anything up (an "always"
        answer): when the disk refuses it, it waits in order with the items."""
        self._waiting.append(_RecordWrite(record))
        self.flush()

    def record_tool_start(self, record: ToolStartRecord) -> None:
        """Write the write-ahead record of a tool call; raises unless it is on disk."""
        self.require_durable()
        try:
            self.session.tool_start(record)
        except SessionWriteError as exc:
            self._failed(exc)
            raise

    def record(self, record: BaseModel) -> None:
        """Write a checkpoint or rewind record now; raises unless it is on disk (and
        everything committed before it)."""
        self.require_durable()
        try:
            self.session.record(record)
        except SessionWriteError as exc:
            self._failed(exc)
            raise

    def rewind(self, to_seq: int) -> list[Item]:
        """Drop the items from ``to_seq`` on, in step with their encoded copies (the rewind
        record is on disk already); returns what was dropped."""
        dropped = self.history.rewind(to_seq)
        if dropped:
            del self._item_json[len(self.history.items) :]
        return dropped

    @property
    def durable(self) -> bool:
        """True when everything committed is on disk."""
        return not self._waiting

    @property
    def waiting(self) -> int:
        """How many records wait for the disk."""
        return len(self._waiting)

    def require_durable(self) -> None:
        """Raise :class:`SessionWriteError` unless everything committed is on disk."""
        self.flush()
        if self.write_error is not None:
            raise self.write_error

    def flush(self) -> bool:
        """Write what waits, in order; True when nothing waits any more."""
        while self._waiting:
            write = self._waiting[0]
            try:
                self._write(write)
            except SessionWriteError as exc:
                self._failed(exc)
                return False
            self._waiting.popleft()
            if isinstance(write, _ItemWrite):
                self.history.add(write.item)
                self._item_json.append(write.encoded)
                self._announce(write.item)
        if self.write_error is not None:
            self.write_error = None
            self.alert("info", "session", f"the session file {self.session.path} is writable again")
        return True

    def _write(self, write: _Write) -> None:
        if isinstance(write, _ItemWrite):
            self.session.append_item(write.item, encoded=write.encoded)
        elif isinstance(write, _TurnEndWrite):
            self.session.turn_end(write.turn, write.result)
        elif isinstance(write, _PruneWrite):
            self.session.prune(write.before_turn, write.prunable_tokens)
        else:
            self.session.record(write.record)

    def _failed(self, exc: SessionWriteError) -> None:
        if self.write_error is None:
            self.alert(
                "error",
                "session",
                f"{exc}. Nothing saved was lost; what the pod could not write waits in memory "
                "and is written as soon as the disk takes it. Free some space, then resume "
                "or send again.",
            )
        self.write_error = exc

    def view(self) -> list[Item]:
        """Committed items including those still waiting for the disk (for history surgery)."""
        waiting = [w.item for w in self._waiting if isinstance(w, _ItemWrite)]
        return [*self.history.items, *waiting] if waiting else self.history.items

    # -- events -----------------------------------------------------------------------------

    def emit(self, event: str, data: BaseModel | dict[str, Any]) -> None:
        """Broadcast one event to every client."""
        self.broadcast(encode_event(event, data))

    def alert(self, level: str, source: str, message: str) -> None:
        """Broadcast an alert a person should see."""
        data = AlertData(
            level=level,  # type: ignore[arg-type]
            source=source,
            message=message,
            timestamp_ms=int(time.time() * 1000),
        )
        if source == "pod" or not self.serving:
            # Raised while the pod was being built (or its MCP servers started), before anyone
            # could listen: kept for the ``history`` reply (what an attaching client asks
            # first) and logged.
            self.startup_alerts.append(data.model_dump(mode="json"))
            log.warning("%s", message)
        self.emit("alert", data)

    def history_line(self, extra: dict[str, Any]) -> bytes:
        """The ``history`` event line, assembled from each item's JSON encoded once at commit."""
        rest = {**extra, "alerts": self.startup_alerts}
        fields = json.dumps(rest, ensure_ascii=False)[1:-1]  # '"greeting": ..., "id": ...'
        items = b",".join(self._item_json)
        tail = fields.encode("utf-8", "backslashreplace")
        return b'{"event": "history", "data": {"items": [' + items + b"], " + tail + b"}}\n"

    def _announce(self, stored: Item) -> None:
        """Tell clients about an item that is now on disk."""
        if isinstance(stored, UserMessage):
            self.emit("user_message", UserMessageData(segments=stored.segments, seq=stored.seq))
        elif isinstance(stored, AssistantMessage):
            for block in stored.blocks:
                if isinstance(block, TextBlock):
                    self.emit("text_done", TextData(text=block.text, seq=stored.seq))
                elif isinstance(block, ToolUseBlock):
                    if stored.synthetic:
                        self.emit(
                            "tool_call_start", ToolCallStartData(id=block.id, name=block.name)
                        )
                    self.emit(
                        "tool_call_done",
                        ToolCallDoneData(
                            id=block.id, name=block.name, arguments=block.input, seq=stored.seq
                        ),
                    )
        elif isinstance(stored, ToolResult):
            self.emit(
                "tool_result",
                ToolResultData(
                    id=stored.call_id,
                    summary=stored.summary,
                    content=stored.content,
                    is_error=stored.is_error,
                    synthetic=stored.synthetic,
                    seq=stored.seq,
                ),
            )
        elif isinstance(stored, Compaction):
            self.emit(
                "compaction",
                CompactionData(
                    seq=stored.seq,
                    first_seq=stored.first_seq,
                    last_seq=stored.last_seq,
                    summary=stored.summary,
                    tokens_before=stored.tokens_before,
                    tokens_after=stored.tokens_after,
                    files=[f.path for f in stored.files],
                    trigger=stored.trigger,
                ),
            )
        else:
            self.emit(
                "system_note",
                SystemNoteData(text=stored.text, origin=stored.origin, seq=stored.seq),
            )
