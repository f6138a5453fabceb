"""The address guard's judgement of single addresses: public unicast only, whatever the
spelling (IPv4 inside IPv6 included)."""

from __future__ import annotations

import ipaddress

import pytest

from orchestrator.core.web_addresses import address_refusal, parse_address

REFUSED = [
    ("127.0.0.1", "loopback"),
    ("127.255.255.254", "loopback"),
    ("::1", "loopback"),
    ("0.0.0.0", "this network"),
    ("::", "unspecified"),
    ("10.0.0.1", "private"),
    ("172.16.0.1", "private"),
    ("172.31.255.255", "private"),
    ("192.168.1.1", "private"),
    ("100.64.0.1", "carrier-grade NAT"),
    ("169.254.169.254", "link-local"),
    ("192.0.0.192", "IETF protocol"),
    ("198.18.0.1", "benchmarking"),
    ("224.0.0.1", "multicast"),
    ("255.255.255.255", "reserved"),
    ("fc00::1", "unique local"),
    ("fd00:ec2::254", "unique local"),
    ("fe80::1", "link-local"),
    ("fec0::1", "site-local"),
    ("ff02::1", "multicast"),
    ("::ffff:127.0.0.1", "loopback address inside the IPv6 address ::ffff:7f00:1"),
    ("::ffff:169.254.169.254", "link-local"),
    ("::127.0.0.1", "loopback"),
    ("64:ff9b::a00:1", "private address inside"),
    ("2002:c0a8:101::1", "private address inside"),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"),
    ("192.0.2.1", "not a public address"),
    ("2001:db8::1", "not a public address"),
]


@pytest.mark.parametrize(("text", "why"), REFUSED)
def test_non_public_addresses_are_refused_with_a_reason(text: str, why: str) -> None:
    address = parse_address(text)
    assert address is not None
    refusal = address_refusal(address)
    assert refusal is not None and why in refusal


@pytest.mark.parametrize(
    "text", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8", "172.32.0.1"]
)
def test_public_addresses_pass(text: str) -> None:
    address = parse_address(text)
    assert address is not None and address_refusal(address) is None


def test_every_refused_address_is_also_not_global_by_pythons_reckoning_or_named() -> None:
    # The named ranges only add precision; none of them lets an address through.
    for text, _ in REFUSED:
        address = ipaddress.ip_address(text)
        assert address_refusal(address) is not None


def test_parse_address_takes_getaddrinfo_forms() -> None:
    assert parse_address("fe80::1%eth0") == ipaddress.ip_address("fe80::1")
    assert parse_address("[::1]") == ipaddress.ip_address("::1")
    assert parse_address("example.com") is None
