"""The app's connections to pods, as a protocol client: one pooled :class:`PodClient` per pod
for requests, and the answer of a method as HTTP sees it.

A method the pod answers directly (``get_status``, ``set_mode``, ``fork``…) is sent with an
id and its reply awaited. A method whose only direct reply is a refusal (``run``, ``pause``,
``approve``…) is sent with an id and followed, on the **same connection**, by ``get_status``:
the pod reads a connection's lines one at a time and refuses a method while it handles it
(``orchestrator/runtime/methods.py``: the machine's refusal is replied synchronously, before
the next line is read), so a status reply with no error ahead of it for the first id means
the method was accepted. The client's reader takes lines in order too, so the error, when
there is one, has reached its waiter before the status's.

The pooled connection is closed after :data:`IDLE_CLOSE_S` without a request: a connected
client keeps a host's pod loaded, and the API must not keep every pod it touched in memory.
A connection the pod closed (it was unloaded, or restarted) is opened again on the next
request. The broadcast events it receives are read and dropped (nobody reads them here).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.serving.client import ClientError, PodClient, PodEvent
from orchestrator.serving.http.context import ApiError

__all__ = ["IDLE_CLOSE_S", "PodLinks", "error_status"]

IDLE_CLOSE_S = 30.0
REPLY_TIMEOUT_S = 60.0
"""The longest a request waits for its reply (``list_models`` may ask the provider)."""


_REFUSALS_409 = frozenset(
    {
        "already_running",
        "not_running",
        "not_paused",
        "not_awaiting_approval",
        "not_awaiting_input",
        "duplicate",
        "forbidden",
    }
)


def error_status(code: str) -> int:
    """The HTTP status of a protocol error code: the machine's refusals 409, a bad request
    422, a full queue 429, anything else 502 (the pod failed, not the request)."""
    if code in _REFUSALS_409:
        return 409
    if code == "invalid_request":
        return 422
    if code == "queue_full":
        return 429
    return 502


def _refused(event: PodEvent) -> ApiError:
    code = str(event.data.get("code") or "internal")
    message = str(event.data.get("message") or "the pod refused the request")
    return ApiError(error_status(code), code, message)


_ids = itertools.count(1)


@dataclass(eq=False)
class _Link:
    """One pooled connection to one pod's socket."""

    socket: Path
    client: PodClient
    drain: asyncio.Task[None] | None = None
    closer: asyncio.TimerHandle | None = None
    busy: int = 0
    refusals: dict[str, PodEvent] = field(default_factory=dict)
    """Errors that came for one of :meth:`PodLinks.submit`'s ids (the client hands a reply
    nobody waits for to its event queue, which :meth:`drain_events` reads)."""

    @property
    def open(self) -> bool:
        return self.drain is not None and not self.drain.done()

    def note(self, event: PodEvent) -> None:
        """Keep an error that answers one of our ids; let everything else go."""
        request_id = event.data.get("id")
        if event.event == "error" and isinstance(request_id, str) and request_id.startswith("h"):
            self.refusals[request_id] = event

    async def drain_events(self) -> None:
        """Read the connection's events (broadcasts nobody here reads) until it closes."""
        async for event in self.client.events():
            self.note(event)

    def refusal(self, request_id: str) -> PodEvent | None:
        """The error that came for ``request_id``, if one did (read up to now)."""
        for event in self.client.ready_events():  # not yet taken by the drain
            self.note(event)
        return self.refusals.pop(request_id, None)


@dataclass(eq=False)
class PodLinks:
    """The pooled connections, one per pod name."""

    socket_for: Callable[[str], Path]
    idle_close_s: float = IDLE_CLOSE_S
    _links: dict[str, _Link] = field(default_factory=dict)
    _opening: dict[str, asyncio.Lock] = field(default_factory=dict)

    async def _link(self, name: str) -> _Link:
        socket = self.socket_for(name)  # 404 for an unknown pod
        lock = self._opening.setdefault(name, asyncio.Lock())
        async with lock:
            link = self._links.get(name)
            if link is not None and link.open and link.socket == socket:
                return link
            if link is not None:
                await self._close(name, link)
            try:
                client = await PodClient.connect(socket, timeout=30.0)
            except ClientError as exc:
                raise ApiError(503, "unavailable", f"pod {name} cannot be reached: {exc}") from None
            link = _Link(socket, client)
            link.drain = asyncio.create_task(link.drain_events())
            self._links[name] = link
            return link

    async def _close(self, name: str, link: _Link) -> None:
        if self._links.get(name) is link:
            del self._links[name]
        if link.closer is not None:
            link.closer.cancel()
        await link.client.close()
        if link.drain is not None:
            link.drain.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await link.drain

    def _used(self, name: str, link: _Link) -> None:
        """Close ``link`` once nobody used it for :attr:`idle_close_s`."""
        if link.closer is not None:
            link.closer.cancel()
        if link.busy:
            return

        def close() -> None:
            if not link.busy:
                asyncio.get_running_loop().create_task(self._close(name, link))

        link.closer = asyncio.get_running_loop().call_later(self.idle_close_s, close)

    async def call(self, name: str, method: str, params: dict[str, Any]) -> PodEvent:
        """Send ``method`` and return its direct reply; :class:`ApiError` for a refusal."""
        for attempt in (1, 2):
            link = await self._link(name)
            link.busy += 1
            try:
                reply = await link.client.request(method, params, timeout=REPLY_TIMEOUT_S)
            except ClientError:
                if attempt == 2 or method not in _SAFE_TO_RETRY:
                    raise ApiError(
                        503, "unavailable", f"pod {name} closed the connection; try again"
                    ) from None
                continue  # the pod was unloaded or restarted under an idle connection
            except TimeoutError:
                raise ApiError(504, "timeout", f"pod {name} did not answer {method}") from None
            finally:
                link.busy -= 1
                self._used(name, link)
            if reply.event == "error":
                raise _refused(reply)
            return reply
        raise AssertionError("unreachable")

    async def submit(self, name: str, method: str, params: dict[str, Any]) -> None:
        """Send a method whose only direct reply is a refusal; return once the pod accepted
        it (see the module's docstring), :class:`ApiError` when it refused."""
        link = await self._link(name)
        request_id = f"h{next(_ids)}"
        link.busy += 1
        try:
            await link.client.send(method, params, id=request_id)
            await link.client.request("get_status", timeout=REPLY_TIMEOUT_S)
        except ClientError:
            raise ApiError(
                503,
                "unavailable",
                f"pod {name} closed the connection before saying whether it took {method}; "
                "look at its status before sending it again",
            ) from None
        except TimeoutError:
            raise ApiError(504, "timeout", f"pod {name} did not answer {method}") from None
        finally:
            link.busy -= 1
            self._used(name, link)
        refusal = link.refusal(request_id)
        if refusal is not None:
            raise _refused(refusal)

    async def forget(self, name: str) -> None:
        """Close the connection to a pod that is gone."""
        link = self._links.get(name)
        if link is not None:
            await self._close(name, link)

    async def aclose(self) -> None:
        """Close every connection (the server stops)."""
        for name, link in list(self._links.items()):
            await self._close(name, link)


_SAFE_TO_RETRY = frozenset(
    {"get_status", "get_history", "list_commands", "list_models", "complete_files", "get_stats"}
)
"""Read-only methods, sent again on a fresh connection when the idle one was closed by the
pod (a method that changes something is never sent twice: it may have been taken)."""
