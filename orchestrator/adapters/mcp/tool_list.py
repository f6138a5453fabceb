"""A server's tool list, kept current: the changes it announces are followed.

A server that says it announces changes (``tools.listChanged``) is subscribed to
(``subscriptions/listen``, protocol 2026-07-28); one of an older protocol announces them
unasked (``notifications/tools/list_changed``). Either way the tools are listed again, one
listing at a time and another if more changes came meanwhile, and the new list is handed on,
so the pod offers it from its next request.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from mcp import Client, types

from orchestrator.adapters.mcp.client_side import Alert
from orchestrator.adapters.mcp.transport import describe

__all__ = ["ToolListChanges"]

log = logging.getLogger(__name__)


@dataclass
class ToolListChanges:
    """The changes one server announces to its tool list, followed."""

    server: str
    """The server's name, for messages."""
    alert: Alert
    """Tells people when the changed list cannot be read."""
    client: Callable[[], Client | None]
    """The live connection's client; None when there is none (the listing stops)."""
    landed: Callable[[list[types.Tool]], None]
    """Given each new list."""
    timeout_s: float
    """How long a call's result waits for a listing under way (the server's ``timeout_s``)."""
    announces: bool = False
    """The current connection's server said it announces changes (``tools.listChanged``)."""
    relisting: asyncio.Task[None] | None = None
    """The listing under way, if any."""
    _again: bool = False
    """More changes came during the listing under way: list once more after it."""

    @contextlib.asynccontextmanager
    async def following(self, client: Client) -> AsyncIterator[None]:
        """Follow the changes of a new connection for as long as it is held."""
        capability = client.server_capabilities.tools
        self.announces = bool(capability and capability.list_changed)
        listener = asyncio.create_task(self._listen(client)) if self.announces else None
        try:
            yield
        finally:
            if listener is not None:
                listener.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await listener

    async def on_message(self, message: Any) -> None:
        """The SDK's handler of messages no request asked for."""
        # Servers before protocol 2026-07-28 announce changes unasked.
        root = getattr(message, "root", message)
        if isinstance(root, types.ToolListChangedNotification):
            self.changed()

    async def _listen(self, client: Client) -> None:
        """Subscribe to the server's tool-list changes (``subscriptions/listen``, 2026-07-28)."""
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                if not subscription.honored.tools_list_changed:
                    return
                async for _event in subscription:
                    self.changed()
        except Exception as exc:  # an older protocol, or the stream lost with the server
            log.debug("MCP server %s: no tool-list subscription: %s", self.server, describe(exc))

    def changed(self) -> None:
        """List the tools again: one listing at a time, another if more changes came meanwhile."""
        if self.relisting is not None and not self.relisting.done():
            self._again = True
            return
        self.relisting = asyncio.create_task(self._relist())

    async def _relist(self) -> None:
        while (client := self.client()) is not None:
            self._again = False
            try:
                listing = await client.list_tools(cache_mode="refresh")
            except Exception as exc:
                self.alert(
                    "warn", f"MCP server {self.server}: could not list its changed tools: {exc}"
                )
                return
            self.landed(list(listing.tools))
            if not self._again:
                return

    async def settle(self) -> None:
        """Let a tool-list change announced during a call land before the call's result does,
        so the next round offers the new list."""
        if not self.announces:
            return  # nothing to wait for on every call of a server that never announces
        # The change arrives on the wire before the result; its listener needs a few turns of
        # the loop to start the listing.
        for _ in range(10):
            await asyncio.sleep(0)
        task = self.relisting
        if task is not None and not task.done():
            with contextlib.suppress(Exception, TimeoutError):
                await asyncio.wait_for(asyncio.shield(task), self.timeout_s)
