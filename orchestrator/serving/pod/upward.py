"""What a pod reports up to its parent pod (a ``task`` child's turn ends, errors, shutdown)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from pathlib import Path

__all__ = ["UpwardReporter"]

log = logging.getLogger(__name__)


class UpwardReporter:
    """Reports this pod's turn ends, worker errors and shutdown to a parent pod."""

    def __init__(self, parent_socket: Path, name: str) -> None:
        self.parent_socket = parent_socket
        self.name = name
        self._tasks: set[asyncio.Task[None]] = set()

    def __call__(self, kind: str, message: str) -> None:
        """Send one ``pod_event`` to the parent without blocking the pod."""
        task = asyncio.get_running_loop().create_task(self._send(kind, message))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, kind: str, message: str) -> None:
        line = json.dumps(
            {"method": "pod_event", "params": {"kind": kind, "pod": self.name, "message": message}}
        )
        try:
            _, writer = await asyncio.wait_for(
                asyncio.open_unix_connection(str(self.parent_socket)), timeout=2.0
            )
            writer.write(line.encode() + b"\n")
            await writer.drain()
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
        except (OSError, TimeoutError) as exc:
            log.warning("could not report %s to parent %s: %s", kind, self.parent_socket, exc)

    async def flush(self) -> None:
        """Wait for reports in flight (before the process exits)."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=2.0)
