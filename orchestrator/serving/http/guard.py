"""The API's gate, as Jupyter's server keeps its own: every request passes it before any route.

In this order: the ``Host`` header must name the address listened on (a DNS-rebinding page
reaches ``127.0.0.1`` under its own name: 421); ``GET /?token=…`` with the right token sets the
``pod_token`` cookie (HttpOnly, SameSite=Strict) and redirects to ``/`` so the token leaves
the address bar; every request needs ``Authorization: Bearer <token>`` or that cookie (401);
a POST, PUT, PATCH or DELETE carrying an ``Origin`` must carry the server's own (403: a page
of another site posting through the user's browser); a body over :data:`MAX_BODY_BYTES` is
413, by its ``Content-Length`` or, sent in chunks, as soon as it grows past it.

A pure ASGI middleware, not a FastAPI dependency: the generated ``/openapi.json`` and the docs
pages are behind it too, and the body limit must cut a stream before any of it is parsed.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs

from orchestrator.serving.http.context import HttpContext

__all__ = ["COOKIE", "MAX_BODY_BYTES", "Guard", "error_body"]

MAX_BODY_BYTES = 1024 * 1024
BODY_TIMEOUT_S = 30.0
"""The longest a request's body may take between two of its chunks (a client that never
finishes sending one holds a connection, never the server: 408 after this)."""
COOKIE = "pod_token"
_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def error_body(code: str, message: str) -> bytes:
    """The one shape of every refusal: ``{"error": {"code", "message"}}``."""
    return json.dumps({"error": {"code": code, "message": message}}).encode()


async def _answer(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class Guard:
    """The ASGI middleware in front of the whole app."""

    def __init__(self, app: App, ctx: HttpContext) -> None:
        self.app = app
        self.ctx = ctx

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        host = headers.get("host", "")
        if host not in self.ctx.allowed_hosts:
            await _answer(
                send,
                421,
                error_body(
                    "wrong_host",
                    f"this server answers to {', '.join(sorted(self.ctx.allowed_hosts))}, "
                    "not the name this request used",
                ),
            )
            return
        method = scope["method"]
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if method == "GET" and scope["path"] == "/" and "token" in query:
            await self._cookie_login(send, query["token"][0])
            return
        if not self._authorised(headers):
            await _answer(
                send,
                401,
                error_body(
                    "unauthorized",
                    "give the API's token: 'Authorization: Bearer <token>' (the token is in "
                    "_http.json in the pod runtime folder), or open the URL the server printed",
                ),
                [(b"www-authenticate", b"Bearer")],
            )
            return
        origin = headers.get("origin")
        if method in _CHANGING and origin is not None and origin != self.ctx.origin:
            await _answer(
                send,
                403,
                error_body(
                    "wrong_origin",
                    f"a page of {origin} may not change anything here; only {self.ctx.origin}",
                ),
            )
            return
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY_BYTES):
            await _answer(send, 413, _too_large())
            return
        await self._with_bounded_body(scope, receive, send)

    async def _with_bounded_body(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the app with a body that may not grow past the limit: once it does, the 413
        is answered here, the app is told the client left, and what it answers is dropped."""
        received = 0
        started = refused = body_done = False

        async def bounded() -> Message:
            nonlocal received, refused, body_done
            if refused:
                return {"type": "http.disconnect"}
            if body_done:  # then only a disconnect comes (an event stream waits for it)
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), BODY_TIMEOUT_S)
            except TimeoutError:
                refused = True
                if not started:
                    await _answer(send, 408, error_body("timeout", "the body never came"))
                return {"type": "http.disconnect"}
            if message["type"] == "http.request":
                body_done = not message.get("more_body", False)
                received += len(message.get("body", b""))
                if received > MAX_BODY_BYTES and not started:
                    refused = True
                    await _answer(send, 413, _too_large())
                    return {"type": "http.disconnect"}
            return message

        async def tracking(message: Message) -> None:
            nonlocal started
            if refused:
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, bounded, tracking)
        except Exception:
            if not refused:
                raise

    def _authorised(self, headers: dict[str, str]) -> bool:
        given = ""
        auth = headers.get("authorization", "")
        scheme, _, credentials = auth.partition(" ")
        if scheme.lower() == "bearer":
            given = credentials.strip()
        elif "cookie" in headers:
            cookie: SimpleCookie = SimpleCookie()
            try:
                cookie.load(headers["cookie"])
            except Exception:
                return False
            if COOKIE in cookie:
                given = cookie[COOKIE].value
        return bool(given) and secrets.compare_digest(given.encode(), self.ctx.token.encode())

    async def _cookie_login(self, send: Send, token: str) -> None:
        if not secrets.compare_digest(token.encode(), self.ctx.token.encode()):
            await _answer(send, 401, error_body("unauthorized", "that is not this server's token"))
            return
        cookie = f"{COOKIE}={self.ctx.token}; HttpOnly; SameSite=Strict; Path=/"
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [
                    (b"location", b"/"),
                    (b"set-cookie", cookie.encode()),
                    (b"content-length", b"0"),
                    (b"cache-control", b"no-store"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})


def _too_large() -> bytes:
    return error_body("too_large", f"request bodies are limited to {MAX_BODY_BYTES} bytes (1 MiB)")


def _headers(scope: Scope) -> dict[str, str]:
    """The request's headers by lower-case name (a repeated one: its first value; a repeated
    ``Host`` is refused by the server before it gets here)."""
    found: dict[str, str] = {}
    for name, value in scope.get("headers", []):
        found.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
    return found
