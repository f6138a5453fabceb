"""Running short protocol exchanges from synchronous typer commands."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from cli.errors import CliError

__all__ = ["answers", "with_client"]

T = TypeVar("T")


def with_client(socket: Path, body: Callable[..., Awaitable[T]]) -> T:
    """Connect to a pod, run ``body(client)``, close, and turn failures into one-line errors."""
    from orchestrator.serving.client import ClientError, PodClient

    async def main() -> T:
        client = await PodClient.connect(socket)
        try:
            return await body(client)
        finally:
            await client.close()

    try:
        return asyncio.run(main())
    except ClientError as exc:
        raise CliError(str(exc)) from None
    except TimeoutError:
        raise CliError(f"the pod on {socket} did not answer in time") from None


def answers(socket: Path, *, ceiling_s: float = 30.0) -> bool:
    """Whether a pod answers a request on ``socket``, within a generous ceiling.

    This is the test of life a dying process cannot pass. A socket that accepts a connection
    is not enough: a process being killed closes its connections before its listening socket,
    so for a moment it still accepts (and is not yet a zombie) though it will never answer;
    the connection it accepted is then reset, which ends the wait at once."""
    try:
        with_client(socket, lambda client: client.status(timeout=ceiling_s))
    except CliError:
        return False
    return True
