"""Fetching one URL for ``web_fetch``: each hop checked, connected to checked addresses, capped.

:meth:`WebFetcher.fetch` requests a URL with httpx and follows redirects itself (at most
:data:`MAX_REDIRECTS`), so that every hop is judged before anything is sent to it:

1. the URL must be one ``web_fetch`` takes (:func:`orchestrator.core.web_targets.fetch_target`:
   http or https, no credentials, no bad port);
2. the caller's rules decide the hop's host (``check``): follow, stop and say where the
   redirect pointed (a host not yet allowed: the model can ask for it in a call of its own,
   which asks a person), or refuse (a deny rule);
3. the host is resolved once and every address checked
   (:func:`orchestrator.adapters.web.pinning.checked_addresses`); the connection goes to those
   addresses and no others (:class:`~orchestrator.adapters.web.pinning.PinnedBackend`).

The body is read as a stream and counted as it is decoded: a response over
:data:`MAX_BYTES` is refused whatever its ``Content-Length`` said, and a compressed body is
inflated in bounded steps, so a small gzip bomb cannot fill memory. Proxy settings from the
environment are not used (the address checks are about where the pod itself connects), and
nothing is kept between fetches: no cookies, no connections.
"""

from __future__ import annotations

import asyncio
import ssl
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import httpcore
import httpx

from orchestrator.adapters.web.pinning import (
    FetchRefused,
    PinnedBackend,
    Resolver,
    checked_addresses,
    system_resolver,
)
from orchestrator.core.web_targets import FetchTarget, fetch_target

__all__ = [
    "MAX_BYTES",
    "MAX_REDIRECTS",
    "HopCheck",
    "HopVerdict",
    "Page",
    "Redirect",
    "WebFetcher",
]

MAX_BYTES = 10 * 1024 * 1024
"""The largest response body read (after decoding); a larger one is refused."""

MAX_REDIRECTS = 10
"""Redirects followed in one fetch."""

TIMEOUT = httpx.Timeout(connect=10.0, read=20.0, write=10.0, pool=10.0)
"""Per step: a server that stops answering mid-body is given up on after ``read``."""

TOTAL_TIMEOUT_S = 60.0
"""The whole fetch, redirects included: a server dripping a byte a second is given up on."""

USER_AGENT = "pod-orchestrator-web-fetch/1 (a coding agent fetching a page its user asked for)"
ACCEPT = (
    "text/markdown, text/html;q=0.9, text/plain;q=0.8, application/pdf;q=0.8, "
    "image/*;q=0.7, */*;q=0.5"
)

HopVerdict = Literal["follow", "ask", "deny"]
HopCheck = Callable[[FetchTarget, int], tuple[HopVerdict, str]]
"""``(target, hop)`` → what to do with it and why (hop 0 is the URL asked for)."""


@dataclass(frozen=True, slots=True)
class Page:
    """A response that was read whole."""

    url: str
    """The final URL, after redirects."""
    status: int
    reason: str
    content_type: str
    """The media type the server claimed, lower-cased, without parameters ("" when none)."""
    charset: str | None
    body: bytes
    hosts: tuple[str, ...]
    """Every host the fetch went through, in order (as rules compare hosts)."""


@dataclass(frozen=True, slots=True)
class Redirect:
    """A fetch that stopped at a redirect to a host the rules do not allow without asking."""

    url: str
    """The URL that redirected."""
    to: str
    reason: str
    hosts: tuple[str, ...]


class WebFetcher:
    """Fetches URLs; one fetcher serves every call of a pod's ``web_fetch``."""

    def __init__(
        self,
        *,
        resolver: Resolver = system_resolver,
        verify: ssl.SSLContext | bool = True,
        network: httpcore.AsyncNetworkBackend | None = None,
        max_bytes: int = MAX_BYTES,
        max_redirects: int = MAX_REDIRECTS,
        timeout: httpx.Timeout = TIMEOUT,
        total_timeout_s: float = TOTAL_TIMEOUT_S,
    ) -> None:
        self.resolver = resolver
        self.verify = verify
        """The TLS trust: True for the usual CA bundle; tests give a context of their own."""
        self.network = network
        """What connections are finally opened with (default: httpcore's own)."""
        self.max_bytes = max_bytes
        self.max_redirects = max_redirects
        self.timeout = timeout
        self.total_timeout_s = total_timeout_s

    async def fetch(
        self, url: str, *, check: HopCheck, private_ok: Callable[[str], bool]
    ) -> Page | Redirect:
        """Fetch ``url``, following redirects that ``check`` lets through.

        ``private_ok(host)``: whether that host may resolve to a non-public address. Raises
        :class:`FetchRefused` saying why when nothing usable came back."""
        try:
            async with asyncio.timeout(self.total_timeout_s):
                return await self._fetch(url, check, private_ok)
        except TimeoutError:
            raise FetchRefused(f"gave up after {self.total_timeout_s:.0f} s") from None

    async def _fetch(
        self, url: str, check: HopCheck, private_ok: Callable[[str], bool]
    ) -> Page | Redirect:
        backend = PinnedBackend(self.network)
        hosts: list[str] = []
        async with _client(backend, self.verify, self.timeout) as client:
            current, previous = url, ""
            for hop in range(self.max_redirects + 1):
                target = _target(current, previous)
                verdict, why = check(target, hop)
                if verdict == "deny":
                    raise FetchRefused(f"{_via(previous)}{target.url} is not fetched: {why}")
                if verdict == "ask":
                    return Redirect(url=previous, to=target.url, reason=why, hosts=tuple(hosts))
                if target.raw_host not in backend.pins:
                    allowed = private_ok(target.host)
                    found = await checked_addresses(
                        target.host, target.port, self.resolver, private_ok=allowed
                    )
                    backend.pin(target.raw_host, found)
                hosts.append(target.host)
                response = await _send(client, target.url)
                try:
                    location = response.headers.get("location")
                    if response.is_redirect and location:
                        previous = target.url
                        current = str(response.url.join(location.strip()))
                        continue
                    body = await _read_capped(response, self.max_bytes)
                finally:
                    await response.aclose()
                content_type = response.headers.get("content-type", "")
                return Page(
                    url=target.url,
                    status=response.status_code,
                    reason=response.reason_phrase,
                    content_type=content_type.split(";", 1)[0].strip().lower(),
                    charset=response.charset_encoding,
                    body=body,
                    hosts=tuple(hosts),
                )
        raise FetchRefused(
            f"more than {self.max_redirects} redirects (the last one pointed to {current})"
        )


def _client(
    backend: PinnedBackend, verify: ssl.SSLContext | bool, timeout: httpx.Timeout
) -> httpx.AsyncClient:
    """An httpx client whose connections go through ``backend`` (and no proxy)."""
    context = httpx.create_ssl_context(verify=verify, trust_env=False)
    transport = httpx.AsyncHTTPTransport(verify=context, trust_env=False)
    # httpx takes no network backend of its own; its pool is httpcore's, which does.
    transport._pool = httpcore.AsyncConnectionPool(
        ssl_context=context, network_backend=backend, max_connections=4
    )
    return httpx.AsyncClient(
        transport=transport,
        follow_redirects=False,
        trust_env=False,
        timeout=timeout,
        headers={"User-Agent": USER_AGENT, "Accept": ACCEPT, "Accept-Encoding": "gzip, deflate"},
    )


def _target(url: str, previous: str) -> FetchTarget:
    try:
        return fetch_target(url)
    except ValueError as exc:
        raise FetchRefused(f"{_via(previous)}{url}: {exc}") from None


def _via(previous: str) -> str:
    return f"{previous} redirected to " if previous else ""


async def _send(client: httpx.AsyncClient, url: str) -> httpx.Response:
    try:
        return await client.send(client.build_request("GET", url), stream=True)
    except httpx.TimeoutException:
        raise FetchRefused(f"{url}: the server did not answer in time") from None
    except httpx.ConnectError as exc:
        raise FetchRefused(f"{url}: could not connect ({exc})") from None
    except httpx.HTTPError as exc:
        raise FetchRefused(f"{url}: the request failed ({exc})") from None


def _too_large(limit: int, size: int | None = None) -> FetchRefused:
    said = f" ({size} bytes)" if size is not None else ""
    return FetchRefused(
        f"the response is larger than web_fetch reads{said}: at most {limit // (1024 * 1024)} MB"
    )


async def _read_capped(response: httpx.Response, limit: int) -> bytes:
    """The body, decoded, refused as soon as it passes ``limit`` bytes."""
    declared = response.headers.get("content-length", "").strip()
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(limit, int(declared))
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding in ("", "identity"):
        inflate = None
    elif encoding in ("gzip", "x-gzip"):
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif encoding == "deflate":
        inflate = zlib.decompressobj()
    else:
        raise FetchRefused(
            f"the response is encoded as {encoding!r}, which web_fetch does not read"
        )
    data = bytearray()
    try:
        async for raw in response.aiter_raw():
            if inflate is None:
                data += raw
            else:
                pending = raw
                while pending and len(data) <= limit:
                    # At most one byte past the limit is inflated per step.
                    data += inflate.decompress(pending, limit - len(data) + 1)
                    pending = inflate.unconsumed_tail
            if len(data) > limit:
                raise _too_large(limit)
    except zlib.error as exc:
        raise FetchRefused(f"the response's {encoding} data is corrupt ({exc})") from None
    except httpx.TimeoutException:
        raise FetchRefused("the server stopped sending the response") from None
    except httpx.HTTPError as exc:
        raise FetchRefused(f"reading the response failed ({exc})") from None
    return bytes(data)
