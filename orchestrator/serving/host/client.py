"""Asking a running host: one request, one reply, over its control socket."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from pathlib import Path
from typing import Any

from orchestrator.protocol import MAX_LINE_BYTES
from orchestrator.serving.host.address import control_socket
from orchestrator.serving.host.control import HostError, HostReply, HostRequest

_ids = itertools.count(1)


class HostConnection:
    """A control connection kept open, for requests in turn. Pods it loads with ``owned``
    live as long as it: closing it (or the process ending, however) shuts them down."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, where: Path):
        self._reader, self._writer, self._where = reader, writer, where

    @classmethod
    async def open(cls, path: Path | None = None) -> HostConnection:
        """Connect to the host; :class:`HostError` when none listens."""
        where = path or control_socket()
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_unix_connection(str(where), limit=MAX_LINE_BYTES), 5.0
            )
        except (OSError, TimeoutError) as exc:
            raise HostError(f"no pod host is listening on {where} ({exc})") from None
        return cls(reader, writer, where)

    async def request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float = 60.0
    ) -> Any:
        """The data of the host's reply; :class:`HostError` when it refuses or is gone."""
        request = HostRequest(id=next(_ids), method=method, params=params or {})  # type: ignore[arg-type]
        try:
            self._writer.write(request.model_dump_json().encode() + b"\n")
            await self._writer.drain()
            line = await asyncio.wait_for(self._reader.readline(), timeout)
        except (OSError, TimeoutError) as exc:
            raise HostError(f"the pod host did not answer {method}: {exc}") from None
        if not line:
            raise HostError(f"the pod host closed the connection before answering {method}")
        reply = HostReply.model_validate_json(line)
        if not reply.ok:
            raise HostError(reply.error or f"the pod host refused {method}")
        return reply.data

    async def close(self) -> None:
        """End the connection (the host shuts down the pods it owns)."""
        self._writer.close()
        with contextlib.suppress(OSError):
            await self._writer.wait_closed()


async def ask_host(
    method: str, params: dict[str, Any] | None = None, *, path: Path | None = None,
    timeout: float = 60.0,
) -> Any:  # fmt: skip
    """The data of the host's reply; :class:`HostError` when it refuses or cannot be reached."""
    connection = await HostConnection.open(path)
    try:
        return await connection.request(method, params, timeout=timeout)
    finally:
        await connection.close()
