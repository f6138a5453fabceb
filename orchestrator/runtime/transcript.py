"""The transcript: history, session file and broadcast, the one place an item becomes saved and
visible.

An item is committed in three steps, always in this order: it joins the in-memory history,
it is written (whole, synced) to the session file, and it is announced to clients. A client
never hears of an item that is not on disk, and no request is built from a history the file
does not hold (:meth:`Transcript.settled` comes first).

Served pods write on the process's writer threads (:meth:`Transcript.write_in_background`):
commits made in one stretch of the event loop go out as one batch with one ``fdatasync``
(group commit), and batches of one session complete in order. Every event a client would
have seen after a commit waits behind it, so clients see exactly the order a synchronous
writer would give them, only without the loop stalling on the disk. Without the writer
threads (a pod built for a test, a fork) each commit is written before it returns.

When the disk refuses a write (full, I/O error), the record waits in memory, in order, and so
does every record committed after it; none of them is announced until it is on disk. They
are tried again when the pod needs them on disk (its next request, an unload, a stop), not
at each commit (every try writes part of a line and cuts it back), so the pod recovers by
itself at its next step once space is free. Code that must
not go on without durability (sending a request, starting a tool with side effects) awaits
:meth:`Transcript.settled` or calls :meth:`Transcript.require_durable`, which raise
:class:`SessionWriteError`; the machine's history surgery just commits, and its records wait
with the rest.

What waits for the disk is spelled in :mod:`.pending_writes`; the events that announce an
item once it is on disk, in :mod:`.item_events`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

from pydantic import BaseModel

from orchestrator.adapters.session import (
    SessionFenced,
    SessionWriteError,
    SessionWriter,
    ToolNotStartedRecord,
    ToolStartRecord,
)
from orchestrator.core.history import (
    History,
    Item,
    ToolResult,
    encode_item,
)
from orchestrator.protocol import (
    AlertData,
    encode_event,
)
from orchestrator.runtime.item_events import item_events
from orchestrator.runtime.pending_writes import (
    Batch,
    Broadcast,
    Entry,
    HoldsReplies,
    ItemWrite,
    PruneWrite,
    RecordWrite,
    TurnEndWrite,
    Write,
    line_of,
)

__all__ = ["Send", "Transcript"]

log = logging.getLogger(__name__)

Send = Callable[[bytes], None]


class Transcript:
    """Commits items (history, then disk, then clients) and broadcasts events, in order."""

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
        """Alerts raised while the pod was being built, for the ``history`` reply."""
        self.serving = False
        """Set once clients can connect; alerts raised before then are kept for them."""
        self.write_error: SessionWriteError | None = None
        """The last failed write, while records are waiting for the disk."""
        self.tap: Callable[[str, BaseModel | dict[str, Any]], None] | None = None
        """Sees every event as it is emitted, before it is encoded (telemetry); None: off."""
        self.on_fenced: Callable[[SessionFenced], None] | None = None
        """Called once when a write is refused because another host owns the pod now (a
        fleet's host drops the pod: no retry here can succeed)."""
        self._waiting: deque[Entry] = deque()
        self._writes = 0
        """How many of ``_waiting`` are records (the rest are events held behind them)."""
        self._pool: Executor | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._batch: Batch | None = None
        self._kicked = False
        self._settled: list[asyncio.Future[None]] = []
        if item_json is None:
            item_json = [encode_item(item) for item in history.items]
        elif len(item_json) != len(history.items):
            raise ValueError(f"{len(item_json)} item texts for {len(history.items)} items")
        self._item_json: list[bytes] = item_json

    def write_in_background(self, pool: Executor) -> None:
        """From now on, write on ``pool``'s threads, in batches (call on the pod's loop)."""
        self._loop = asyncio.get_running_loop()
        self._pool = pool

    # -- committing -------------------------------------------------------------------------

    def commit(self, item: Item) -> Item:
        """Number the item, add it to history and write it; it is announced once on disk.

        Returns the numbered item, whether or not the disk took it yet (see
        :attr:`write_error`); a caller that needs it durable awaits :meth:`settled`.
        """
        if self.clean_result is not None and isinstance(item, ToolResult):
            item = self.clean_result(item)
        stored = self.history.add(self.history.stamp(item))
        self._queue(ItemWrite(stored, encode_item(stored)))
        return stored

    def end_turn(self, turn: int, result: str) -> None:
        """Record that a turn closed for good."""
        self._queue(TurnEndWrite(turn, result))

    def record_prune(self, before_turn: int, prunable_tokens: int) -> None:
        """Record that the prune bound moved."""
        self._queue(PruneWrite(before_turn, prunable_tokens))

    def keep(self, record: BaseModel) -> None:
        """Write a record that must not be lost but need not hold anything up (an "always"
        answer): when the disk refuses it, it waits in order with the items."""
        self._queue(RecordWrite(record))

    async def record_tool_start(self, record: ToolStartRecord) -> None:
        """Write the write-ahead record of a tool call (see :meth:`persist`)."""
        await self.persist(record)

    def record_tool_not_started(self, call_id: str) -> None:
        """Record that a call whose start record was queued never ran (see
        :class:`ToolNotStartedRecord`); it goes out in order after that record."""
        self.keep(ToolNotStartedRecord(call_id=call_id))

    async def persist(self, record: BaseModel) -> None:
        """Write a record the pod acts on (a tool's start, a hook's verdict, a child's link)
        with the next batch; returns once it and everything before it are on disk. Raises
        :class:`SessionWriteError` when the disk refuses it, and then it is not written
        later either: the caller goes on as if it had never been made."""
        write = RecordWrite(record)  # in one batch with the commits before it, when they meet
        self._queue(write)
        try:
            await self.settled()
        except SessionWriteError:
            for index, entry in enumerate(self._waiting):
                if entry is write:
                    del self._waiting[index]
                    self._writes -= 1
                    break
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
        return self._writes == 0

    @property
    def waiting(self) -> int:
        """How many records wait for the disk (or for a writer thread)."""
        return self._writes

    def require_durable(self) -> None:
        """Raise :class:`SessionWriteError` unless everything committed is on disk.

        With writer threads this waits for them on the calling thread: for the few records
        that must be on disk before a synchronous caller goes on (an unload, a rewind).
        """
        self.flush()
        if self.write_error is not None:
            raise self.write_error

    async def settled(self) -> None:
        """Wait until everything committed is on disk; raise :class:`SessionWriteError` when
        the disk refuses it (the records wait, and the next call tries again: commits made
        meanwhile do not)."""
        if self._pool is None:
            self.require_durable()
            return
        while self._writes:
            if self._batch is None:
                self._start_batch()  # now, or again after a failure
            waiter = asyncio.get_running_loop().create_future()
            self._settled.append(waiter)
            await waiter
            if self._batch is None and self.write_error is not None:
                raise self.write_error

    def flush(self) -> bool:
        """Write what waits, in order, on this thread; True when nothing waits any more."""
        if self._batch is not None:
            batch = self._batch
            with contextlib.suppress(SessionWriteError):
                batch.future.result()  # the one in flight first: order is the file's
            self._finish_batch(batch)
        if self._writes:
            entries = list(self._waiting)
            try:
                self.session.write_lines(
                    [line_of(e) for e in entries if not isinstance(e, Broadcast)]
                )
            except SessionWriteError as exc:
                self._done(entries, exc)
            else:
                self._done(entries, None)
        self._wake()
        return not self._writes

    def close(self, *, discard_if_empty: bool = False) -> None:
        """Write what waits (if the disk takes it), then close the session file (removing it
        if ``discard_if_empty`` and it holds nothing but its header)."""
        with contextlib.suppress(SessionWriteError):
            self.require_durable()
        self.session.close(discard_if_empty=discard_if_empty)

    def _queue(self, write: Write) -> None:
        self._waiting.append(write)
        self._writes += 1
        if self._pool is None:
            self.flush()
        elif self.write_error is not None:
            # The disk refused the records before this one: it waits behind them, and they are
            # tried again when the pod needs them on disk (``settled``: before a request, an
            # unload, a stop), not at every commit, each try writing part of a line that is
            # then cut back (a reader of the file would meet that torn tail meanwhile).
            pass
        elif self._batch is None and not self._kicked and self._loop is not None:
            # On the next turn of the loop: whatever else this stretch commits joins the batch.
            self._kicked = True
            self._loop.call_soon(self._start_batch)

    def _start_batch(self) -> None:
        self._kicked = False
        if self._batch is not None or not self._writes or self._pool is None:
            return
        entries = list(self._waiting)
        lines = [line_of(e) for e in entries if not isinstance(e, Broadcast)]
        batch = Batch(entries, self._pool.submit(self.session.write_lines, lines))
        self._batch = batch
        loop = self._loop
        assert loop is not None

        def landed(_: Future[None]) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is gone: close() settles it
                loop.call_soon_threadsafe(self._landed, batch)

        batch.future.add_done_callback(landed)

    def _landed(self, batch: Batch) -> None:
        """A writer thread finished ``batch`` (on the loop)."""
        if self._batch is not batch:
            return  # :meth:`flush` finished it already
        self._finish_batch(batch)
        if self._writes and self.write_error is None:
            self._start_batch()  # what was committed meanwhile: the next group
        self._wake()

    def _finish_batch(self, batch: Batch) -> None:
        self._batch = None
        exc = batch.future.exception()
        if exc is not None and not isinstance(exc, SessionWriteError):
            # Not the disk refusing (a bug in encoding, say): the records are not on disk.
            log.error("session write failed", exc_info=exc)
            exc = SessionWriteError(self.session.path, OSError(str(exc)))
        self._done(batch.entries, exc)

    def _done(self, entries: list[Entry], exc: SessionWriteError | None) -> None:
        """``entries`` (the head of the queue) reached the disk, or ``exc`` says they did not."""
        if exc is not None:
            # The records wait in order; the events held behind them are told now, as a
            # synchronous writer would have told them while the disk refused.
            held = [e for e in self._waiting if isinstance(e, Broadcast)]
            self._waiting = deque(e for e in self._waiting if not isinstance(e, Broadcast))
            for event in held:
                event.send()
            self._failed(exc)
            return
        for entry in entries:
            self._waiting.popleft()
            if isinstance(entry, Broadcast):
                entry.send()
                continue
            self._writes -= 1
            if isinstance(entry, ItemWrite):
                self._item_json.append(entry.encoded)
                self._announce(entry.item)
        while self._waiting and isinstance(self._waiting[0], Broadcast):
            self._waiting.popleft().send()  # type: ignore[union-attr]
        if self.write_error is not None:
            self.write_error = None
            self.alert("info", "session", f"the session file {self.session.path} is writable again")

    def _wake(self) -> None:
        waiters, self._settled = self._settled, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def _failed(self, exc: SessionWriteError) -> None:
        first, self.write_error = self.write_error is None, exc  # set first: alerts go out now
        if first and isinstance(exc, SessionFenced):
            self.alert("error", "session", str(exc))  # another host owns the pod: no retry helps
            if self.on_fenced is not None:
                self.on_fenced(exc)
        elif first:
            self.alert(
                "error",
                "session",
                f"{exc}. Nothing saved was lost; what the pod could not write waits in memory "
                "and is written as soon as the disk takes it. Free some space, then resume "
                "or send again.",
            )

    def view(self) -> list[Item]:
        """Committed items, including those still waiting for the disk (history surgery)."""
        return self.history.items

    # -- events -----------------------------------------------------------------------------

    def emit(self, event: str, data: BaseModel | dict[str, Any]) -> None:
        """Broadcast one event to every client, after every item committed before it."""
        if self.tap is not None:
            self.tap(event, data)
        line = encode_event(event, data)
        if self._writes and self.write_error is None:
            self._waiting.append(Broadcast(lambda: self.broadcast(line)))
        else:
            self.broadcast(line)  # the common case (a streamed delta): no closure, no queue

    def after_writes(
        self, send: Callable[[], None], to: object = None, size: int | None = None
    ) -> None:
        """Call ``send`` once everything committed so far is on disk (now, when it is, or
        when the disk refuses it): what a client is told never runs ahead of the records
        before it, so a ``get_history`` asked after ``idle`` holds the turn's last answer.
        ``to``: the reply's client; one that :class:`HoldsReplies` is told while it waits,
        with ``size``, the bytes of a reply built already (None: built when sent)."""
        if not (self._writes and self.write_error is None):
            send()
        elif isinstance(to, HoldsReplies):
            release = to.hold(size)

            def sent() -> None:
                try:
                    send()
                finally:
                    release()

            self._waiting.append(Broadcast(sent))
        else:
            self._waiting.append(Broadcast(send))

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

    def _tell(self, event: str, data: BaseModel) -> None:
        if self.tap is not None:
            self.tap(event, data)
        self.broadcast(encode_event(event, data))  # at once: never behind later records

    def _announce(self, stored: Item) -> None:
        """Tell clients about an item that is now on disk."""
        for event, data in item_events(stored):
            self._tell(event, data)
