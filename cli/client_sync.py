"""Running short protocol exchanges from synchronous typer commands."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from cli.errors import CliError

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
