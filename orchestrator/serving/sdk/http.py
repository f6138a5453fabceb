"""The SDK over the HTTP API (docs/http.md): :class:`HttpPodClient`, a
:class:`~orchestrator.serving.transport.Transport` speaking JSON routes and reading the pod's
events as Server-Sent Events, with the same calls as a socket's
:class:`~orchestrator.serving.client.PodClient`.

The events stream is opened when the client connects and kept open: a dropped stream is
opened again with ``Last-Event-ID`` (:meth:`HttpPodClient.reconnect`), and the server catches
it up from the pod's replay buffer, each event once, or sends ``resync``. Events are delivered
once each even if a server sent one again: an id at or before the last one delivered, in the
same epoch, is skipped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from orchestrator.protocol import EVENT_ID_RE
from orchestrator.serving.client_errors import (
    ClientError,
    InvalidRequest,
    NotFound,
    PodRequestError,
    Unauthorized,
    request_error,
)
from orchestrator.serving.client_events import MAX_LINE_BYTES, PodEvent
from orchestrator.serving.pod_calls import PodCalls

__all__ = ["HttpPodClient", "http_endpoint"]

_NAMED_ROUTES = {"pause": "pause", "resume": "resume", "cancel": "cancel", "compact": "compact"}
"""Methods with a route of their own whose body is the method's params."""


def http_endpoint(path: Path | None = None) -> tuple[str, str]:
    """The URL and token a server wrote to its info file (the host's ``_http.json``, in the
    runtime dir, unless ``path`` names another: ``pod serve --http``'s, docs/http.md)."""
    if path is None:
        from orchestrator.config.paths import runtime_dir

        path = runtime_dir() / "_http.json"
    try:
        raw = json.loads(path.read_text())
        return str(raw["url"]), str(raw["token"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ClientError(
            f"no HTTP API to reach: {path} is missing or unreadable ({exc}); start one with "
            "`pod host serve --http PORT`, or give the url and token"
        ) from None


class HttpPodClient(PodCalls):
    """One pod of an HTTP API server, as a :class:`Transport`; the SDK's calls on top."""

    def __init__(self, http: httpx.AsyncClient, name: str) -> None:
        self.http = http
        self.name = name
        self.last_eid: str | None = None
        self._queue: asyncio.Queue[PodEvent | None] = asyncio.Queue()
        self._stream: asyncio.Task[None] | None = None

    @classmethod
    async def connect(
        cls,
        name: str,
        *,
        url: str | None = None,
        token: str | None = None,
        endpoint_file: Path | None = None,
        after: str | None = None,
        timeout: float = 10.0,
    ) -> HttpPodClient:
        """Connect to pod ``name`` of the server at ``url`` with ``token`` (both read from
        ``_http.json`` when not given, see :func:`http_endpoint`), its events stream open;
        with ``after``, the stream catches up from that event id first."""
        if url is None or token is None:
            found_url, found_token = http_endpoint(endpoint_file)
            url, token = url or found_url, token or found_token
        http = httpx.AsyncClient(
            base_url=url.rstrip("/"),
            headers={"Authorization": f"Bearer {token}"},
            timeout=httpx.Timeout(timeout),
            trust_env=False,  # a proxy from the environment must not see the token
        )
        client = cls(http, name)
        client.last_eid = after
        try:
            await client.reconnect()
        except BaseException:
            await http.aclose()
            raise
        return client

    def _pod(self, tail: str = "") -> str:
        return f"/v1/pods/{_segment(self.name)}{tail}"

    async def _post(self, path: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
        try:
            response = await self.http.post(path, json=body, timeout=timeout)
        except httpx.HTTPError as exc:
            raise ClientError(f"the HTTP API did not answer {path}: {exc!r}") from None
        return _answer(response)

    async def _route(self, method: str, params: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one method by its route (docs/http.md); the JSON answer."""
        if method == "run":
            return await self._post(self._pod("/runs"), params, timeout)
        if method in _NAMED_ROUTES:
            return await self._post(self._pod(f"/{_NAMED_ROUTES[method]}"), params, timeout)
        if method == "rewind" and not params.get("dry_run"):
            return await self._post(self._pod("/rewind"), params, timeout)
        if method in ("approve", "deny"):
            body = {k: v for k, v in params.items() if k != "id"}
            body["decision"] = method
            return await self._post(
                self._pod(f"/approvals/{_segment(params['id'])}"), body, timeout
            )
        if method == "answer_elicitation":
            body = {k: v for k, v in params.items() if k != "id"}
            path = self._pod(f"/elicitations/{_segment(params['id'])}")
            return await self._post(path, body, timeout)
        return await self._post(self._pod(f"/methods/{_segment(method)}"), params, timeout)

    async def send(
        self, method: str, params: dict[str, Any] | None = None, *, id: Any = None
    ) -> None:
        """Send one method; its reply, or its refusal as an ``error`` event, is queued with
        the broadcast events (as a socket's would be)."""
        try:
            answer = await self._route(method, params or {}, 30.0)
        except PodRequestError as exc:
            data = {"code": exc.code, "message": exc.reason, "id": id}
            self._queue.put_nowait(PodEvent("error", data))
            return
        if "event" in answer:
            data = dict(answer.get("data") or {})
            if id is not None:
                data["id"] = id
            self._queue.put_nowait(PodEvent(str(answer["event"]), data))

    async def request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float = 10.0
    ) -> PodEvent:
        """A method with a direct reply: that reply (an ``error`` event when refused)."""
        try:
            if method == "get_status":
                try:
                    response = await self.http.get(self._pod(), timeout=timeout)
                except httpx.HTTPError as exc:
                    raise ClientError(f"the HTTP API did not answer: {exc!r}") from None
                return PodEvent("status", _answer(response))
            answer = await self._route(method, params or {}, timeout)
        except PodRequestError as exc:
            return PodEvent("error", {"code": exc.code, "message": exc.reason, "id": None})
        if "event" not in answer:
            raise ClientError(f"the HTTP API answered {method} without its reply: {answer}")
        return PodEvent(str(answer["event"]), dict(answer.get("data") or {}))

    async def accepted(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float = 10.0
    ) -> None:
        """A method whose only reply is an error: the server answers once the pod took it
        (2xx), or with the refusal (409, 422), raised as its code's class."""
        await self._route(method, params or {}, timeout)

    async def next_event(self, timeout: float | None = None) -> PodEvent | None:
        """The next event of the stream, or None once it ended (call :meth:`reconnect`)."""
        if timeout is None:
            return await self._queue.get()
        return await asyncio.wait_for(self._queue.get(), timeout)

    def ready_events(self) -> list[PodEvent]:
        """Events that already arrived, without waiting."""
        ready: list[PodEvent] = []
        while not self._queue.empty():
            event = self._queue.get_nowait()
            if event is None:
                self._queue.put_nowait(None)
                break
            ready.append(event)
        return ready

    async def events(self) -> AsyncIterator[PodEvent]:
        """Events until the stream ends (without reconnecting: see ``follow``)."""
        while (event := await self._queue.get()) is not None:
            yield event

    async def reconnect(self) -> None:
        """Open the events stream (again), from :attr:`last_eid`; :class:`ClientError` (or
        the server's refusal: :class:`NotFound`, :class:`Unauthorized`) when it cannot."""
        await self._stop_stream()
        self._queue = asyncio.Queue()
        opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._stream = asyncio.create_task(self._read_stream(opened), name=f"sse-{self.name}")
        await opened

    async def _read_stream(self, opened: asyncio.Future[None]) -> None:
        from orchestrator.serving.sdk.sse import bounded_lines, sse_frames

        headers = {"Accept": "text/event-stream"}
        if self.last_eid is not None:
            headers["Last-Event-ID"] = self.last_eid
        try:
            async with self.http.stream(
                "GET", self._pod("/events"), headers=headers, timeout=httpx.Timeout(10, read=None)
            ) as response:
                if response.status_code != 200:
                    await response.aread()
                    _answer(response)  # raises the refusal
                    raise ClientError(f"the events stream answered {response.status_code}")
                opened.set_result(None)
                lines = bounded_lines(response.aiter_text(), MAX_LINE_BYTES)
                async for frame in sse_frames(lines):
                    self._deliver(frame.event, frame.data, frame.id)
        except asyncio.CancelledError:
            if not opened.done():
                opened.cancel()
            raise
        except Exception as exc:  # a dropped stream ends it; the caller reconnects
            if not opened.done():
                if not isinstance(exc, ClientError):
                    exc = ClientError(f"the events stream of {self.name} failed: {exc!r}")
                opened.set_exception(exc)
        finally:
            self._queue.put_nowait(None)

    def _deliver(self, name: str, text: str, eid: str | None) -> None:
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            data = {}
        if eid is not None and _not_after(eid, self.last_eid):
            return  # delivered already: each event once
        if eid is not None:
            self.last_eid = eid
        self._queue.put_nowait(PodEvent(name, data, eid))

    async def _stop_stream(self) -> None:
        if self._stream is not None:
            self._stream.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._stream
            self._stream = None

    async def close(self) -> None:
        """Close the stream and the HTTP client."""
        await self._stop_stream()
        await self.http.aclose()


def _segment(text: Any) -> str:
    """``text`` as one path segment: an id the pod relayed from the model (a tool call's) must
    not reach another route (``../pause``), so every character but letters, digits and
    ``-._~`` is escaped, and a segment of dots alone is refused."""
    value = str(text)
    if value.strip(".") == "":
        raise InvalidRequest(f"{value!r} cannot name a pod, a call or a method")
    return quote(value, safe="")


def _not_after(eid: str, last: str | None) -> bool:
    """Whether ``eid`` is ``last`` or comes before it in the same epoch."""
    got, seen = EVENT_ID_RE.fullmatch(eid), EVENT_ID_RE.fullmatch(last or "")
    return bool(got and seen and got["epoch"] == seen["epoch"] and int(got["n"]) <= int(seen["n"]))


def _answer(response: httpx.Response) -> dict[str, Any]:
    """A 2xx answer's JSON; a refusal raised as its code's class."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.is_success:
        return body if isinstance(body, dict) else {}
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        message = str(error.get("message", ""))
        if response.status_code == 404 and error["code"] != NotFound.code:
            raise NotFound(message, code=error["code"])  # its own word for it: unknown_pod…
        raise request_error(error["code"], message)
    if response.status_code == 422 and isinstance(body, dict):
        raise InvalidRequest(_detail(body.get("detail")))
    if response.status_code == 401:
        raise Unauthorized("no token, or the wrong one")
    if response.status_code == 404:
        raise NotFound(f"{response.request.url.path} is not on this server")
    raise ClientError(f"the HTTP API answered {response.status_code}: {response.text[:200]!r}")


def _detail(detail: Any) -> str:
    """FastAPI's validation detail as one line: each field and its reason."""
    if isinstance(detail, list):
        parts = []
        for item in detail:
            if isinstance(item, dict):
                where = ".".join(str(p) for p in item.get("loc", ()) if p != "body")
                parts.append(f"{where}: {item.get('msg', '')}")
        if parts:
            return "; ".join(parts)
    return str(detail)
