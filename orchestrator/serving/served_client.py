"""One client of a pod's socket, as the server holds it: the lines queued for it, the bytes
in flight, and the bounds that disconnect a client that does not read.

What one client may hold waiting behind the reply in flight, and what all clients hold
together (:class:`QueueBudget`), are bounded by bytes; over either bound a client is dropped:
it gets a ``queue_full`` error line after what was already on its way, then the connection is
cut (:mod:`orchestrator.serving.server` has the whole story).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from orchestrator.protocol import ErrorData, encode_event

__all__ = ["DROP_GRACE_S", "READ_PAUSE_BYTES", "QueueBudget", "ServedClient"]

log = logging.getLogger("orchestrator.serving.server")

DROP_GRACE_S = 5.0
"""How long a dropped client has to read its error line before the connection is cut (a
client that never reads would otherwise keep what was in flight to it for ever)."""

READ_PAUSE_BYTES = 1024 * 1024
"""A client's requests are read only while the pod holds less than this for it: one that does
not read what it asked for gets no more work done for it (its next requests wait in its socket,
costing the pod nothing), instead of its replies being built, queued and dropped. Thirty clients
asking for a long history forty times each without reading grew the pod by hundreds of MB
and kept the loop busy for seconds, building replies only to drop them."""
_BATCH_BYTES = 1024 * 1024
"""Queued lines joined into one write; a single longer line is written alone."""


@dataclass(eq=False)
class QueueBudget:
    """What all clients hold together, and the bound on it."""

    limit: int
    clients: set[ServedClient]
    held: int = 0

    def grew(self, size: int) -> None:
        """Account for ``size`` more bytes; drop the clients that hold most until within."""
        self.held += size
        while self.held > self.limit:
            victim = max(
                (c for c in self.clients if not c.dropped), key=lambda c: c.held_bytes, default=None
            )
            if victim is None or victim.held_bytes == 0:
                return
            victim.drop(
                f"all clients together hold {self.held} bytes, over the bound of {self.limit}; "
                f"this client holds the most ({victim.held_bytes} bytes unread) and is "
                "disconnected. Read the events you ask for."
            )


@dataclass(eq=False)
class ServedClient:
    writer: asyncio.StreamWriter
    max_queued_bytes: int
    budget: QueueBudget
    peer_pid: int | None = None
    lines: deque[bytes] = field(default_factory=deque)
    queued_bytes: int = 0
    """Bytes in ``lines``."""
    in_flight: int = 0
    """Bytes handed to the transport and not yet drained."""
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    room: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when what the pod holds for this client went down (its requests may be read)."""
    closing: bool = False
    """Deliver what is queued, then close."""
    dropped: bool = False
    """Over a bound: disconnected, nothing more is queued."""
    unwritable: bool = False
    """Writing to it failed (it closed its side): its lines are still read to their end."""
    reading: asyncio.Task[None] | None = None
    fed_from: int = 1
    """``n`` of the first broadcast event of this connection's stream (see ``subscribe``)."""
    held_replies: int = 0
    """Replies to this client held back until the session's writes land and built only then
    (its reading pauses: each would otherwise be built at once when they do, none of them
    counted meanwhile)."""
    held_lines: int = 0
    """Bytes of replies held back the same way but built already (a ``status``): counted
    toward the read pause like queued bytes, so a client's next request is still read at
    once (a pipelined ``get_status`` sees the state the method left)."""

    @property
    def held_bytes(self) -> int:
        """What the pod holds in memory for this client."""
        return self.queued_bytes + self.in_flight

    def send(self, line: bytes) -> None:
        if self.dropped or self.closing:
            return
        if self.lines or self.in_flight:
            # The reply being delivered may be larger than the bound (a long history to a
            # client that reads); only what waits behind it counts.
            delivering = 0 if self.in_flight else len(self.lines[0])
            waiting = self.queued_bytes - delivering
            if waiting + len(line) > self.max_queued_bytes:
                self.drop(
                    f"{waiting + len(line)} bytes queued and unread, over the bound of "
                    f"{self.max_queued_bytes} bytes for one client; disconnected. Read the "
                    "events you ask for."
                )
                return
        self.lines.append(line)
        self.queued_bytes += len(line)
        self.wake.set()
        self.budget.grew(len(line))

    def drained(self) -> None:
        """What was in flight reached the peer's socket."""
        self.budget.held -= self.in_flight
        self.in_flight = 0
        self.room.set()

    async def wait_for_room(self) -> None:
        """Until the pod holds at most ``READ_PAUSE_BYTES`` for this client (or drops it)."""
        while (self.held_bytes + self.held_lines > READ_PAUSE_BYTES or self.held_replies) and not (
            self.dropped or self.closing
        ):
            self.room.clear()
            await self.room.wait()

    __call__ = send  # the client is the ``reply`` its requests' handler is given

    def hold(self, size: int | None = None) -> Callable[[], None]:
        """A reply is held back (``Transcript.after_writes``): ``size`` bytes already built,
        or None for one built when it is sent; call what this returns once it is sent."""
        if size is None:
            self.held_replies += 1
        else:
            self.held_lines += size

        def release() -> None:
            if size is None:
                self.held_replies -= 1
            else:
                self.held_lines -= size
            self.room.set()

        return release

    def drop(self, why: str) -> None:
        """Disconnect now and release everything queued for this client."""
        log.warning(
            "client (pid %s) disconnected: %s",
            self.peer_pid if self.peer_pid is not None else "unknown",
            why,
        )
        self.dropped = True
        self.budget.held -= self.held_bytes
        self.lines.clear()
        self.queued_bytes = 0
        self.in_flight = 0
        transport = self.writer.transport
        # What is in flight is whole lines: the error line after it is a line of its own.
        # close() delivers both to a client that reads; abort() after the grace period, not
        # at once, is what a client that never reads gets (close alone would keep the buffer
        # until it read).
        with contextlib.suppress(Exception):
            transport.write(encode_event("error", ErrorData(code="queue_full", message=why)))
        transport.close()
        asyncio.get_running_loop().call_later(DROP_GRACE_S, transport.abort)
        self.wake.set()
        self.room.set()

    def close_when_flushed(self) -> None:
        self.closing = True
        self.wake.set()
        if self.unwritable:
            self.stop_reading()  # nothing to flush: the writer is over already

    def stop_reading(self) -> None:
        """Read no more of its lines (the pod closes, or the client was dropped)."""
        if self.reading is not None:
            self.reading.cancel()

    def next_batch(self) -> bytes:
        """Take queued lines for one write: up to ``_BATCH_BYTES``, at least one line."""
        batch = [self.lines.popleft()]
        size = len(batch[0])
        while self.lines and size + len(self.lines[0]) <= _BATCH_BYTES:
            line = self.lines.popleft()
            batch.append(line)
            size += len(line)
        self.queued_bytes -= size
        self.in_flight = size
        return b"".join(batch)
