"""``[sandbox] network`` entries, and whether one lets a host and port through (pure).

An entry is ``host``, ``host:port`` or ``host:*``:

* ``pypi.org:443``: that host, that port;
* ``pypi.org``: that host on ports 80 and 443 (HTTP and HTTPS, what a bare name means to
  people);
* ``pypi.org:*``: that host on any port;
* ``*.github.com:443``: any name under ``github.com`` (``api.github.com``,
  ``a.b.github.com``), not ``github.com`` itself: list both when both are meant;
* ``127.0.0.1:8080``, ``[::1]:8080``: an address, compared as an address (``[0::1]`` is
  ``[::1]``).

Names are compared without case and without a trailing dot. Anything not matched is refused;
a name that only resolves to an allowed address is not that address (the proxy checks the
name it was asked for, never what DNS says).

A loopback entry with its ports (``127.0.0.1:8080``, ``[::1]:8080``, ``localhost:8080``) is
also reachable at that same address inside the sandbox: :func:`loopback_forwards` says where
the bridge listens for it.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

BARE_NAME_PORTS = frozenset({80, 443})
"""The ports an entry without one allows."""

_LABEL = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?<!-)\Z")
_FORM = "host, host:port or host:* (e.g. pypi.org:443, *.github.com:443, 127.0.0.1:8080)"


@dataclass(frozen=True, slots=True)
class HostRule:
    """One parsed ``[sandbox] network`` entry."""

    host: str
    """A normalized name or address; for a wildcard, the name below which any name matches."""
    wildcard: bool = False
    """``*.host``: names under ``host``, not ``host`` itself."""
    ports: frozenset[int] | None = BARE_NAME_PORTS
    """The ports allowed; None: any."""

    def matches(self, host: str, port: int) -> bool:
        """Whether this entry lets ``host`` (normalized, see :func:`normalize_host`) and
        ``port`` through."""
        if self.ports is not None and port not in self.ports:
            return False
        if self.wildcard:
            return host.endswith("." + self.host)
        return host == self.host

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        if self.wildcard:
            host = "*." + host
        if self.ports is None:
            return f"{host}:*"
        if self.ports == BARE_NAME_PORTS:
            return host
        return ",".join(f"{host}:{port}" for port in sorted(self.ports))


def normalize_host(host: str) -> str:
    """``host`` as rules compare it: an address in its canonical form, a name lower-cased
    without a trailing dot; ValueError when it is neither."""
    text = host.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        pass
    name = text.lower().removesuffix(".")
    if not name or len(name) > 253 or not all(_LABEL.match(label) for label in name.split(".")):
        raise ValueError(f"{host!r} is not a host name or an IP address")
    return name


def split_host_port(text: str) -> tuple[str, str | None]:
    """``host:port`` → (host, port text), ``[v6]:port`` included; the port None when absent."""
    if text.startswith("["):
        host, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise ValueError(f"{text!r}: an IPv6 address goes in brackets, [::1]:8080")
        return host, rest[1:] if rest else None
    if text.count(":") > 1:
        raise ValueError(f"{text!r}: an IPv6 address goes in brackets, [::1]:8080")
    host, colon, port = text.partition(":")
    return host, port if colon else None


def parse_port(text: str) -> int:
    """A port number, 1 to 65535; ValueError otherwise."""
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"{text!r} is not a port (1 to 65535)")
    return int(text)


def parse_host_rule(entry: str) -> HostRule:
    """One ``[sandbox] network`` entry parsed; ValueError names the entry and the form."""
    try:
        host, port = split_host_port(entry.strip())
        wildcard = host.startswith("*.")
        if wildcard:
            host = host[2:]
        if "*" in host:
            raise ValueError("a * may only begin a name, as in *.github.com")
        normal = normalize_host(host)
        if wildcard and ":" not in normal and normal.replace(".", "").isdigit():
            raise ValueError("a wildcard applies to names, not addresses")
        ports = None if port == "*" else BARE_NAME_PORTS if port is None else {parse_port(port)}
    except ValueError as exc:
        raise ValueError(f"[sandbox] network entry {entry!r}: {exc}; write {_FORM}") from None
    return HostRule(normal, wildcard, None if ports is None else frozenset(ports))


@dataclass(frozen=True, slots=True, order=True)
class LoopbackForward:
    """A loopback address and port the bridge listens on inside the sandbox, relaying each
    connection to the pod's proxy as ``CONNECT target:port``."""

    port: int
    listen: str
    """An address of the sandbox's own loopback: ``127.0.0.1`` (any of ``127.0.0.0/8``) or
    ``::1``."""
    target: str
    """What the proxy is asked for: the listed address itself, or ``localhost``."""

    def __str__(self) -> str:
        """The bridge's ``--forward`` value: ``LISTEN:PORT=TARGET:PORT``."""
        return f"{_bracketed(self.listen)}:{self.port}={_bracketed(self.target)}:{self.port}"


def loopback_forwards(rules: Iterable[HostRule]) -> tuple[LoopbackForward, ...]:
    """Where the bridge listens inside the sandbox so that an allowed loopback ``host:port``
    is reached at that same address (pure): each loopback address listed with its ports, and
    for ``localhost`` with its ports both ``127.0.0.1`` and ``::1`` (what the name means
    inside), unless an address entry has that address and port already. An entry with any
    port (``127.0.0.1:*``) is not forwarded: the bridge cannot take every port."""
    rules = tuple(rules)
    found: dict[tuple[str, int], str] = {}
    for rule in rules:
        if rule.wildcard or rule.ports is None or not _is_loopback_address(rule.host):
            continue
        for port in rule.ports:
            found[rule.host, port] = rule.host
    for rule in rules:
        if rule.wildcard or rule.ports is None or rule.host != "localhost":
            continue
        for port in rule.ports:
            for listen in ("127.0.0.1", "::1"):
                found.setdefault((listen, port), "localhost")
    return tuple(sorted(LoopbackForward(port, listen, t) for (listen, port), t in found.items()))


def _is_loopback_address(host: str) -> bool:
    """``127.0.0.0/8`` or ``::1`` (not an IPv4-mapped form: the bridge binds plain ones)."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback and (address.version == 4 or host == "::1")


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def host_allowed(rules: Iterable[HostRule], host: str, port: int) -> bool:
    """Whether any of ``rules`` lets ``host`` (as a client named it) and ``port`` through;
    a host that is neither a name nor an address is not let through."""
    try:
        normal = normalize_host(host)
    except ValueError:
        return False
    return any(rule.matches(normal, port) for rule in rules)
