"""An MCP server's prompts: listed (``prompts/list``, followed when the server says the list
changed) and turned into prompt text (``prompts/get``), for the pod's custom commands
(``/mcp__<server>__<prompt>``, docs/mcp.md#prompts).

A server's text is untrusted: names that a menu cannot take are left out, descriptions are
cleaned by the catalog, and a prompt's text is capped and loses its control characters before
it reaches the model or a client.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import logging
import unicodedata
from collections.abc import AsyncIterator, Callable

from mcp import Client, types

from orchestrator.adapters.mcp.transport import describe

__all__ = [
    "MAX_PROMPTS",
    "MAX_PROMPT_CHARS",
    "PromptListChanges",
    "list_prompts",
    "prompt_text",
]

log = logging.getLogger(__name__)

MAX_PROMPTS = 200
"""Prompts of one server offered; past it the rest are left out (a log line says so)."""

MAX_PROMPT_CHARS = 100_000
"""A prompt's text longer than this is cut, and says so."""


async def list_prompts(client: Client, *, refresh: bool = False) -> list[types.Prompt]:
    """The server's prompts, page by page, at most :data:`MAX_PROMPTS`."""
    prompts: list[types.Prompt] = []
    cursor: str | None = None
    while True:
        page = await client.list_prompts(cursor=cursor, cache_mode="refresh" if refresh else "use")
        prompts += page.prompts
        cursor = page.next_cursor
        if cursor is None or len(prompts) >= MAX_PROMPTS:
            break
    if len(prompts) > MAX_PROMPTS:
        log.info("only the first %d prompts of a server are offered", MAX_PROMPTS)
    return prompts[:MAX_PROMPTS]


class PromptListChanges:
    """The changes a server announces to its prompt list (``notifications/prompts/
    list_changed``), followed: the list is read again and handed on."""

    def __init__(
        self,
        server: str,
        client: Callable[[], Client | None],
        landed: Callable[[list[types.Prompt]], None],
    ) -> None:
        self.server = server
        self._client = client
        self._landed = landed
        self.relisting: asyncio.Task[None] | None = None
        """The listing under way, if any."""

    def changed(self) -> None:
        """The server said the list changed: read it again (one listing at a time)."""
        if self.relisting is None or self.relisting.done():
            self.relisting = asyncio.create_task(self.relist())

    @contextlib.asynccontextmanager
    async def following(self, client: Client) -> AsyncIterator[None]:
        """Follow a new connection's prompt-list changes while it is held: a server of the
        2026-07-28 protocol is subscribed to, an older one announces them unasked."""
        capability = client.server_capabilities.prompts
        listening = capability is not None and bool(capability.list_changed)
        listener = asyncio.create_task(self._listen(client)) if listening else None
        try:
            yield
        finally:
            if listener is not None:
                listener.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await listener

    async def _listen(self, client: Client) -> None:
        try:
            async with client.listen(prompts_list_changed=True) as subscription:
                if not subscription.honored.prompts_list_changed:
                    return
                async for _event in subscription:
                    await self.relist()
        except Exception as exc:  # an older protocol, or the stream lost with the server
            log.debug("MCP server %s: no prompt-list subscription: %s", self.server, describe(exc))

    def is_change(self, message: object) -> bool:
        """Whether a message no request asked for says the prompt list changed."""
        root = getattr(message, "root", message)
        return isinstance(root, types.PromptListChangedNotification)

    async def relist(self) -> None:
        """Read the list again (a failure is logged: the old list stays)."""
        client = self._client()
        if client is None:
            return
        try:
            prompts = await list_prompts(client, refresh=True)
        except Exception as exc:
            log.warning(
                "MCP server %s: could not list its changed prompts: %s", self.server, describe(exc)
            )
            return
        self._landed(prompts)


def prompt_text(result: types.GetPromptResult, *, max_chars: int = MAX_PROMPT_CHARS) -> str:
    """A prompt's messages as the text of one user message: each message's text, an
    assistant's marked as such, embedded text resources with their URI, what cannot be text
    (images, binary blobs) named instead; capped, and without control characters."""
    parts: list[str] = []
    for message in result.messages:
        text = _content_text(message.content)
        if message.role == "assistant":
            text = f"[assistant]\n{text}"
        parts.append(text)
    return _untrusted("\n\n".join(parts), max_chars)


def _content_text(content: object) -> str:
    if isinstance(content, types.TextContent):
        return content.text
    if isinstance(content, types.EmbeddedResource):
        resource = content.resource
        if isinstance(resource, types.TextResourceContents):
            return f"[Resource: {resource.uri}]\n{resource.text}"
        if isinstance(resource, types.BlobResourceContents):
            mime = resource.mime_type or ""
            if mime.startswith("text/"):
                try:
                    decoded = base64.b64decode(resource.blob, validate=True).decode("utf-8")
                except (binascii.Error, UnicodeDecodeError):
                    decoded = None
                if decoded is not None:
                    return f"[Resource: {resource.uri}]\n{decoded}"
            return f"[Resource: {resource.uri} ({mime or 'binary'}), not included]"
    if isinstance(content, types.ResourceLink):
        return f"[Resource link: {content.uri}]"
    if isinstance(content, types.ImageContent):
        return f"[an image ({content.mime_type}), not included]"
    kind = getattr(content, "type", type(content).__name__)
    return f"[{kind} content, not included]"


def _untrusted(text: str, max_chars: int) -> str:
    """A server's text made safe to send and to show: control and format characters other
    than newlines and tabs dropped, cut at ``max_chars`` (said so)."""
    kept = "".join(
        ch for ch in text if ch in "\n\t" or unicodedata.category(ch) not in ("Cc", "Cf")
    )
    if len(kept) > max_chars:
        kept = kept[:max_chars] + f"\n[prompt cut at {max_chars:,} characters]"
    return kept
