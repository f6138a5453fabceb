"""One client connection to the pod under test that records every event, in order, with when.

The kit reads the socket with :func:`orchestrator.serving.client.read_events`, the same line reader
as the pod's own client, but keeps every event (replies included) in one list so checks can
look back at the order things happened in.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.serving.client import MAX_LINE_BYTES, BadLine, close_connection, read_events

__all__ = ["Mismatch", "Recorder", "Seen"]


class Mismatch(Exception):
    """A check failed in a way that makes the rest of the row meaningless.

    A verdict, not a runtime error (outside the error tree, as ``RowFailed``)."""


@dataclass(frozen=True, slots=True)
class Seen:
    """One event received, with when (seconds since the connection opened)."""

    event: str
    data: dict[str, Any]
    at: float


class Recorder:
    """One client connection that records every event in order."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self.events: list[Seen] = []
        self.closed = False
        self.garbage: list[str] = []
        self._changed = asyncio.Condition()
        self._t0 = time.monotonic()
        self._ids = itertools.count(1)
        self._pump = asyncio.create_task(self._read())

    @classmethod
    async def connect(cls, path: Path) -> Recorder:
        """Connect to a pod's socket."""
        reader, writer = await asyncio.open_unix_connection(str(path), limit=MAX_LINE_BYTES)
        return cls(reader, writer)

    async def _read(self) -> None:
        try:
            async for event in read_events(self._reader):
                if isinstance(event, BadLine):
                    # A pod under test may print garbage; keep reading, report it if asked.
                    self.garbage.append(event.text[:200])
                    continue
                seen = Seen(event.event, dict(event.data), self._now())
                async with self._changed:
                    self.events.append(seen)
                    self._changed.notify_all()
        except (ConnectionError, OSError, ValueError):  # ValueError: a line over the limit
            pass
        finally:
            async with self._changed:
                self.closed = True
                self._changed.notify_all()

    def _now(self) -> float:
        return round(time.monotonic() - self._t0, 3)

    def next_id(self, prefix: str) -> str:
        """A fresh request id."""
        return f"kit-{prefix}-{next(self._ids)}"

    async def send(self, *messages: dict[str, Any]) -> int:
        """Write the messages as JSON lines in one write; returns the event index at send."""
        mark = len(self.events)
        data = b"".join(json.dumps(m).encode() + b"\n" for m in messages)
        try:
            self._writer.write(data)
            await self._writer.drain()
        except (ConnectionError, OSError) as exc:
            raise Mismatch(
                f"the pod closed the connection before the kit could send: {exc}"
            ) from None
        return mark

    async def wait_for(
        self,
        predicate: Callable[[Seen], bool],
        *,
        start: int,
        timeout: float,
        what: str,
    ) -> int:
        """The index of the first event from ``start`` matching ``predicate``."""
        deadline = time.monotonic() + timeout
        async with self._changed:
            while True:
                for index in range(start, len(self.events)):
                    if predicate(self.events[index]):
                        return index
                if self.closed:
                    raise Mismatch(f"the pod closed the connection while the kit waited for {what}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise Mismatch(f"timed out after {timeout:g} s waiting for {what}")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), remaining)

    async def wait_closed(self, timeout: float) -> bool:
        """Wait for the pod to close the connection."""
        deadline = time.monotonic() + timeout
        async with self._changed:
            while not self.closed:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), remaining)
        return True

    async def status(self, timeout: float) -> Seen:
        """Ask ``get_status`` and wait for the reply carrying its id."""
        request_id = self.next_id("status")
        mark = await self.send({"method": "get_status", "id": request_id})
        index = await self.wait_for(
            lambda e: e.event == "status" and e.data.get("id") == request_id,
            start=mark,
            timeout=timeout,
            what="the reply to get_status",
        )
        return self.events[index]

    def tail(self, start: int = 0, limit: int = 40) -> list[str]:
        """Compact lines describing events from ``start`` (for failure reports)."""
        lines: list[str] = []
        previous = ""
        for seen in self.events[start:]:
            if seen.event in ("text_delta", "tool_call_args_delta", "thinking_delta"):
                if previous == seen.event:
                    continue
                line = f"{seen.at:7.3f} {seen.event} …"
            elif seen.event == "status":
                line = f"{seen.at:7.3f} status {seen.data.get('status')}/{seen.data.get('state')}"
                if "id" in seen.data:
                    line += f" (reply {seen.data['id']})"
            else:
                detail = json.dumps(seen.data, ensure_ascii=False)
                line = f"{seen.at:7.3f} {seen.event} {detail[:160]}"
            previous = seen.event
            lines.append(line)
        if len(lines) > limit:
            lines = [f"… {len(lines) - limit} earlier events", *lines[-limit:]]
        return lines

    async def close(self) -> None:
        """Close the connection."""
        await close_connection(self._writer, self._pump)
