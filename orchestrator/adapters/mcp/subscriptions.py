"""Subscriptions to the resources the model or the user attached, and the notes their updates
become.

When ``read_mcp_resource`` reads a resource (the model's call, or an ``@mcp:server:uri`` a
person attached) of a server that advertises ``resources.subscribe``, the pod subscribes to
it (``resources/subscribe``). A ``notifications/resources/updated`` for one of those URIs marks
it changed; at the next round boundary the pod tells the model, in one system note per server,
which of its resources changed since it read them (so it can read them again). Updates are
coalesced: a storm of them, for one URI or many, is one note naming each URI once; a URI the
pod did not subscribe to is ignored, and a server keeps at most :data:`MAX_SUBSCRIPTIONS`.
The pod unsubscribes when it stops (``close``); a server that is gone takes its subscriptions
with it, and a restarted one is subscribed again to what the pod had read.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcp import Client, types
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from orchestrator.core.history import SystemMessage

__all__ = ["MAX_SUBSCRIPTIONS", "ResourceSubscriptions"]

log = logging.getLogger(__name__)

MAX_SUBSCRIPTIONS = 50
"""Resources of one server the pod follows at most (later reads are not followed)."""
UNSUBSCRIBE_S = 2.0
"""How long closing waits for each unsubscribe: a server that does not answer is closed anyway."""
_URI_CHARS = 300
"""A URI is named in a note up to this many characters (a server's URIs are its own text)."""


@dataclass
class ResourceSubscriptions:
    """One server's subscriptions, and which of them changed since the model last heard."""

    server: str
    client: Callable[[], Client | None]
    followed: set[str] = field(default_factory=set)
    changed: set[str] = field(default_factory=set)
    refused: bool = False
    """The server refused a subscription (a protocol without them): none is tried again."""
    _listener: asyncio.Task[None] | None = None
    """With a 2026-07-28 server: the ``subscriptions/listen`` stream of the followed URIs."""

    @staticmethod
    def offered(client: Client) -> bool:
        """Whether the server advertises ``resources.subscribe``."""
        resources = client.server_capabilities.resources
        return bool(resources is not None and resources.subscribe)

    async def follow(self, uri: str) -> None:
        """Subscribe to ``uri`` (once; within :data:`MAX_SUBSCRIPTIONS`); a refusal is logged
        and the read it came with goes on."""
        client = self.client()
        if (
            client is None
            or self.refused
            or uri in self.followed
            or len(self.followed) >= MAX_SUBSCRIPTIONS
            or not self.offered(client)
        ):
            return
        self.followed.add(uri)
        if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            # Open before the read's result goes back, so no update after it is missed.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._listen(client).wait(), UNSUBSCRIBE_S * 5)
            return
        try:
            with warnings.catch_warnings():  # deprecated for 2026-07-28 servers, which refuse it
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await client.subscribe_resource(uri)
        except Exception as exc:  # an error answer, or a protocol that dropped the method
            self.followed.discard(uri)
            self.refused = True
            log.info("MCP server %s: no subscription to %s: %s", self.server, uri, exc)

    def _listen(self, client: Client) -> asyncio.Event:
        """(Re)open the listen stream for every followed URI (the protocol of 2026-07-28 has
        no ``resources/subscribe``: a stream's filter names its URIs); the event is set once
        the server acknowledged it, or refused."""
        if self._listener is not None:
            self._listener.cancel()
        opened = asyncio.Event()
        self._listener = asyncio.create_task(self._stream(client, sorted(self.followed), opened))
        return opened

    async def _stream(self, client: Client, uris: list[str], opened: asyncio.Event) -> None:
        try:
            async with client.listen(resource_subscriptions=uris) as stream:
                opened.set()
                async for event in stream:
                    uri = getattr(event, "uri", None)
                    if uri in self.followed:
                        self.changed.add(uri)
        except Exception as exc:  # the server refused, or its stream ended with it
            log.info("MCP server %s: resource updates no longer followed: %s", self.server, exc)
        finally:
            opened.set()

    async def resubscribe(self, client: Client) -> None:
        """A new connection to the server (a restart): follow again what the pod had read."""
        if not self.followed or self.refused or not self.offered(client):
            return
        if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            self._listen(client)
            return
        for uri in sorted(self.followed):
            with contextlib.suppress(Exception), warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await client.subscribe_resource(uri)

    async def on_message(self, message: Any) -> None:
        """The SDK's handler of messages no request asked for: an update of a followed URI."""
        root = getattr(message, "root", message)
        if isinstance(root, types.ResourceUpdatedNotification):
            uri = str(root.params.uri)
            if uri in self.followed:
                self.changed.add(uri)

    def take_note(self) -> SystemMessage | None:
        """The note for the model about the resources that changed, or None; clears them."""
        if not self.changed:
            return None
        uris = sorted(self.changed)
        self.changed.clear()
        named = ", ".join(uri[:_URI_CHARS] for uri in uris)
        which = "a resource" if len(uris) == 1 else f"{len(uris)} resources"
        return SystemMessage(
            text=f"MCP server {self.server} says {which} you read changed since: {named}. "
            f"Read again (read_mcp_resource, server {self.server!r}) what you still need."
        )

    async def close(self) -> None:
        """Unsubscribe from everything (the pod stops), each within UNSUBSCRIBE_S."""
        client = self.client()
        uris, self.followed = sorted(self.followed), set()
        self.changed.clear()
        if self._listener is not None:
            self._listener.cancel()  # ends the stream: the server stops sending
            await asyncio.wait({self._listener}, timeout=UNSUBSCRIBE_S)
            self._listener = None
            return
        if client is None:
            return
        for uri in uris:
            with contextlib.suppress(Exception), warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await asyncio.wait_for(client.unsubscribe_resource(uri), UNSUBSCRIBE_S)
