"""Which addresses ``web_fetch`` may connect to: public ones only (pure).

A page the model is told to fetch, or a redirect a page sends, must not turn the pod into a
way into the user's own machine or network: the loopback interface (a dev server, a database
admin page), the LAN (a router), a cloud's metadata service (``169.254.169.254``,
``fd00:ec2::254``: credentials), a carrier's NAT range. So every address a host resolves to is
checked here before anything is sent, and one that is not a public unicast address is
refused: :func:`address_refusal` says why, in words.

``ipaddress``'s ``is_global`` is the base; the named ranges below are checked first so the
reason is precise and so a range some Python version calls global (``192.0.0.0/24``,
``fec0::/10``, multicast) is refused all the same. An IPv6 address that carries an IPv4 one
(IPv4-mapped ``::ffff:127.0.0.1``, IPv4-compatible ``::127.0.0.1``, NAT64 ``64:ff9b::/96``,
6to4 ``2002::/16``) is judged by the IPv4 address inside; a Teredo address is refused (a
tunnel whose far end cannot be judged).
"""

from __future__ import annotations

import ipaddress
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network

__all__ = ["Address", "address_refusal", "parse_address"]

Address = IPv4Address | IPv6Address

_NAMED: tuple[tuple[IPv4Network | IPv6Network, str], ...] = tuple(
    (ipaddress.ip_network(net), what)
    for net, what in (
        ("0.0.0.0/8", "a 'this network' address (0.0.0.0/8)"),
        ("127.0.0.0/8", "a loopback address"),
        ("10.0.0.0/8", "a private address"),
        ("172.16.0.0/12", "a private address"),
        ("192.168.0.0/16", "a private address"),
        ("100.64.0.0/10", "a carrier-grade NAT address (100.64.0.0/10)"),
        ("169.254.0.0/16", "a link-local address (where cloud metadata services answer)"),
        ("192.0.0.0/24", "an IETF protocol address (192.0.0.0/24)"),
        ("198.18.0.0/15", "a benchmarking address (198.18.0.0/15)"),
        ("224.0.0.0/4", "a multicast address"),
        ("240.0.0.0/4", "a reserved address (240.0.0.0/4)"),
        ("::/128", "the unspecified address"),
        ("::1/128", "a loopback address"),
        ("fc00::/7", "a unique local (private) address (fc00::/7)"),
        ("fe80::/10", "a link-local address"),
        ("fec0::/10", "a site-local address"),
        ("ff00::/8", "a multicast address"),
        ("100::/64", "a discard address (100::/64)"),
    )
)

_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


def parse_address(text: str) -> Address | None:
    """An address as ``getaddrinfo`` or a URL gives it (an IPv6 zone ``%eth0`` dropped);
    None when ``text`` is not one."""
    try:
        return ipaddress.ip_address(text.split("%", 1)[0].strip("[]"))
    except ValueError:
        return None


def _embedded(address: IPv6Address) -> IPv4Address | None:
    """The IPv4 address an IPv6 one carries, where the network would reach that one."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if any(address in net for net in _NAT64) or (address in _IPV4_COMPATIBLE and int(address) > 1):
        return IPv4Address(int(address) & 0xFFFF_FFFF)
    return None


def address_refusal(address: Address) -> str | None:
    """Why ``web_fetch`` must not connect to ``address``; None for a public unicast one."""
    if isinstance(address, IPv6Address):
        inner = _embedded(address)
        if inner is not None:
            why = address_refusal(inner)
            return None if why is None else f"{why} inside the IPv6 address {address}"
        if address.teredo is not None:
            return "a Teredo tunnel address"
    for net, what in _NAMED:
        if address.version == net.version and address in net:
            return what
    if not address.is_global:
        return "not a public address"
    return None
