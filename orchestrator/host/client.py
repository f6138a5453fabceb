"""Asking a running host: one request, one reply, over its control socket."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

from orchestrator.host.control import HostReply, HostRequest
from orchestrator.host.host import HostError, control_socket
from orchestrator.protocol import MAX_LINE_BYTES
from orchestrator.server import socket_is_live

_ids = itertools.count(1)


def host_running(path: Path | None = None) -> bool:
    """Whether a host of this user listens now."""
    return socket_is_live(path or control_socket())


async def ask_host(
    method: str, params: dict[str, Any] | None = None, *, path: Path | None = None,
    timeout: float = 60.0,
) -> Any:  # fmt: skip
    """The data of the host's reply; :class:`HostError` when it refuses or cannot be reached."""
    where = path or control_socket()
    request = HostRequest(id=next(_ids), method=method, params=params or {})  # type: ignore[arg-type]
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_unix_connection(str(where), limit=MAX_LINE_BYTES), 5.0
        )
    except (OSError, TimeoutError) as exc:
        raise HostError(f"no pod host is listening on {where} ({exc})") from None
    try:
        writer.write(request.model_dump_json().encode() + b"\n")
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), timeout)
    except (OSError, TimeoutError) as exc:
        raise HostError(f"the pod host did not answer {method}: {exc}") from None
    finally:
        writer.close()
    if not line:
        raise HostError(f"the pod host closed the connection before answering {method}")
    reply = HostReply.model_validate_json(line)
    if not reply.ok:
        raise HostError(reply.error or f"the pod host refused {method}")
    return reply.data
