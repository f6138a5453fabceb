"""One MCP server as the pod uses it: its tools called, and kept answering.

A call the pod interrupts (pause, cancel, shutdown) is abandoned at once; the SDK then sends
the server ``notifications/cancelled``, and a server that does not answer after its grace
(stuck in the call it was told to cancel) is restarted. A server that stopped by itself is
started again at the next call of one of its tools, up to ``MAX_RESTARTS`` times. What the
server asks of the pod during a call is routed by :mod:`.asking`; its connection is
:mod:`.connection`; the set of a pod's servers is :mod:`.servers`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from mcp import Client, types

from orchestrator.adapters.mcp.client_side import progress_line
from orchestrator.adapters.mcp.connection import MAX_RESTARTS, McpConnection, McpServerError
from orchestrator.capabilities.tools.base import ToolError

__all__ = ["MAX_RESTARTS", "McpServer", "McpServerError"]

_T = TypeVar("_T")


@dataclass
class McpServer(McpConnection):
    """One configured server: its connection, and the pod's calls through it."""

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        on_progress: Callable[[str], None] | None = None,
    ) -> types.CallToolResult:
        """Call one tool; raises ToolError when the server is not there to answer, breaks the
        protocol or takes longer than ``call_timeout_s``. The call carries a progress token:
        each progress notification is passed to ``on_progress`` as a line of text."""
        answered = asyncio.Event()

        async def progressed(progress: float, total: float | None, message: str | None) -> None:
            # Progress that comes after the pod gave up on the call belongs to no result.
            if on_progress is not None and not answered.is_set():
                on_progress(progress_line(progress, total, message))

        # The call's task (and the task _request starts for it) knows its tool: a request for
        # input answered there names this call's tool, not another in flight beside it.
        with self.asking.calling(tool):
            try:
                return await self._request(
                    tool,
                    lambda client: client.call_tool(tool, arguments, progress_callback=progressed),
                )
            finally:
                answered.set()

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        """Read one resource, with the same limits and failures as a tool call; where the
        server offers it, the pod then follows the resource's updates (:mod:`.subscriptions`)."""
        result = await self._request(
            f"the resource {uri}", lambda client: client.read_resource(uri, cache_mode="bypass")
        )
        await self.subscriptions.follow(uri)
        return result

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> types.GetPromptResult:
        """Get one of its prompts with its arguments, with the same limits and failures as a
        tool call."""
        return await self._request(
            f"the prompt {name}", lambda client: client.get_prompt(name, arguments)
        )

    async def _request(self, what: str, send: Callable[[Client], Awaitable[_T]]) -> _T:
        """Send one request (``what`` names it in messages) and wait for its answer; raises
        ToolError when the server is not there to answer, breaks the protocol or takes longer
        than ``call_timeout_s``. An interrupt tells the server to cancel it."""
        if self._client is None:
            await self._revive()
        client, watch, broken = self._client, self._watch, self._broken
        if client is None:
            raise ToolError(f"MCP server {self.name} is not running ({self.status})")
        self._refusal = None
        with self.asking.in_request():
            # A task of its own, so that a request the server will never answer (it answered
            # another request, or nothing) can be given up on without cancelling the caller.
            calling = asyncio.ensure_future(send(client))
            calling.add_done_callback(_retrieved)
            breaking = asyncio.ensure_future(broken.wait())
            try:
                await asyncio.wait(
                    {calling, breaking},
                    timeout=self.config.call_timeout_s,
                    return_when=asyncio.FIRST_COMPLETED,
                )
            except asyncio.CancelledError:
                calling.cancel()  # the SDK tells the server to cancel it
                self.asking.withdraw()
                self._check_after_interrupt(client, what)
                raise
            finally:
                breaking.cancel()
        if not calling.done():
            calling.cancel()
            self.asking.withdraw()
            if watch is not None and watch.breach is not None:
                raise ToolError(
                    f"MCP server {self.name}: {what} failed: the server {watch.breach}; "
                    "it is restarted at the next call of its tools"
                )
            self._check_after_interrupt(client, what)
            raise ToolError(
                f"MCP server {self.name}: {what} did not answer within "
                f"{self.config.call_timeout_s:g} s (call_timeout_s); the server was told to "
                "cancel it"
            )
        try:
            return calling.result()
        except Exception as exc:
            why = self._why(exc)
            if await self._alive(client):
                raise ToolError(f"MCP server {self.name}: {what} failed: {why}") from exc
            # Gone: say so once, with what it printed last; its tools stay, and answer that.
            raise ToolError(
                self._stopped_by_itself(f"it stopped during a call of {what}: {why}")
            ) from exc

    def _check_after_interrupt(self, client: Client, tool: str) -> None:
        # One check at a time: interrupts in a row need one look at the server, not many.
        if self._checking is None or self._checking.done():
            self._checking = asyncio.create_task(self._after_cancel(client, tool))

    async def _after_cancel(self, client: Client, tool: str) -> None:
        """A call was interrupted: give the server its grace, then make sure it answers;
        one that does not (stuck in the call it was told to cancel) is restarted."""
        await asyncio.sleep(self.config.cancel_grace_s)
        if self._client is not client or await self._alive(client):
            return
        self.alert(
            "warn",
            f"MCP server {self.name} did not answer {self.config.cancel_grace_s:g} s after a "
            f"call of {tool} was interrupted; restarting it",
        )
        async with self._restarting:
            await self._restart("")

    async def _restart(self, note: str) -> None:
        """Replace the connection and process with new ones (the caller holds the lock);
        the new tool list is offered, and people are told either way."""
        await self._disconnect()
        if self._closed:
            return
        self.restarts += 1
        try:
            await self.start()
        except McpServerError as exc:
            self.alert("error", str(exc))
            return
        self._landed(self.tools)
        self.alert("info", f"MCP server {self.name} restarted" + (f" ({note})" if note else ""))

    @staticmethod
    async def _alive(client: Client) -> bool:
        # A request any server answers (ping is gone from the 2026 protocol).
        try:
            await asyncio.wait_for(client.list_tools(cache_mode="bypass"), 2.0)
        except Exception:
            return False
        return True

    async def _revive(self) -> None:
        """Start again a server that stopped by itself, within MAX_RESTARTS."""
        async with self._restarting:
            if self._closed or self._client is not None or self._revivals >= MAX_RESTARTS:
                return
            if not self.status.startswith("failed"):
                return  # stopped on purpose, or never started
            self._revivals += 1
            await self._restart(f"{self._revivals} of {MAX_RESTARTS} restarts after it stopped")


def _retrieved(task: asyncio.Future[Any]) -> None:
    """Collect the outcome of a call given up on, which nobody else will."""
    if not task.cancelled():
        task.exception()
