"""Resolve a host once, check every address, and connect only to the addresses checked.

Checking a name's addresses and then letting the HTTP client resolve it again leaves a gap: a
name whose DNS answers a public address to the check and ``127.0.0.1`` a moment later (DNS
rebinding) would pass the check and reach the loopback. So the fetcher resolves each host
itself (:func:`checked_addresses`), and the HTTP client's network layer is
:class:`PinnedBackend`: it opens TCP connections to the pinned addresses of a host and to
nothing else (a host with no pin fails to connect). The client still speaks to the *name*: the
``Host`` header, TLS's SNI and the certificate check all use the host of the URL, so HTTPS
verifies the name as usual.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import httpcore

from orchestrator.core.web_addresses import Address, address_refusal, parse_address
from orchestrator.errors import PodRuntimeError

__all__ = ["FetchRefused", "PinnedBackend", "Resolver", "checked_addresses", "system_resolver"]

Resolver = Callable[[str, int], Awaitable[list[str]]]
"""``(host, port)`` → the addresses the host resolves to, as text."""


class FetchRefused(PodRuntimeError):
    """A fetch that was not made, or not finished; the message says why, for the model."""


async def system_resolver(host: str, port: int) -> list[str]:
    """The host's addresses from the system resolver (``getaddrinfo``), in its order."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


async def checked_addresses(
    host: str, port: int, resolver: Resolver, *, private_ok: bool
) -> tuple[Address, ...]:
    """The addresses to connect to for ``host``: all of them public, unless ``private_ok``.

    One address that is not public refuses the host: a name that resolves to both a public
    and a private address is not sent to either (which one a client picks is not ours to
    trust). Raises :class:`FetchRefused` saying why."""
    literal = parse_address(host)
    if literal is not None:
        found: list[Address] = [literal]
    else:
        try:
            answers = await resolver(host, port)
        except (OSError, UnicodeError) as exc:
            raise FetchRefused(f"{host} could not be resolved ({exc})") from None
        found = [a for a in (parse_address(text) for text in answers) if a is not None]
        if not found:
            raise FetchRefused(f"{host} resolves to no address")
    if not private_ok:
        for address in found:
            why = address_refusal(address)
            if why is not None:
                named = host if literal is not None else f"{host} resolves to {address}, which"
                raise FetchRefused(
                    f"{named} is {why}: web_fetch reaches public addresses only, unless an "
                    f"allow rule names the host itself (web_fetch(domain:{host}))"
                )
    return tuple(dict.fromkeys(found))


class PinnedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network layer, connecting each host only to the addresses pinned for it."""

    def __init__(self, inner: httpcore.AsyncNetworkBackend | None = None) -> None:
        self.inner = inner or httpcore.AnyIOBackend()
        self.pins: dict[str, tuple[Address, ...]] = {}
        """Host, as the client names it in a connection (the URL's host) → its addresses."""

    def pin(self, host: str, addresses: Iterable[Address]) -> None:
        """Connect to ``host`` only at these addresses (checked before)."""
        self.pins[host] = tuple(addresses)

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """A connection to the first pinned address of ``host`` that answers."""
        addresses = self.pins.get(host)
        if not addresses:
            # Fail closed: a host nobody checked is never connected to.
            raise httpcore.ConnectError(f"no checked address for {host}")
        failure: Exception | None = None
        for address in addresses:
            try:
                return await self.inner.connect_tcp(
                    str(address),
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Never: a fetch goes over TCP only."""
        raise httpcore.ConnectError("web_fetch connects over TCP only")

    async def sleep(self, seconds: float) -> None:
        """Wait (the connection pool's retry delay)."""
        await self.inner.sleep(seconds)
