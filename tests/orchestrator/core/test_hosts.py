"""``[sandbox] network`` entries and the proxy's decision over host, port and the list (pure)."""

from __future__ import annotations

import pytest

from orchestrator.core.hosts import (
    HostRule,
    LoopbackForward,
    host_allowed,
    loopback_forwards,
    normalize_host,
    parse_host_rule,
)

LIST = ["pypi.org:443", "*.github.com:443", "files.example.com", "10.0.0.5:*", "[::1]:8080"]


def _allowed(host: str, port: int) -> bool:
    return host_allowed([parse_host_rule(entry) for entry in LIST], host, port)


@pytest.mark.parametrize(
    ("host", "port"),
    [
        ("pypi.org", 443),
        ("PyPI.org.", 443),  # case and a trailing dot do not matter
        ("api.github.com", 443),
        ("a.b.github.com", 443),  # any depth under the wildcard
        ("files.example.com", 80),  # a bare name: HTTP
        ("files.example.com", 443),  # and HTTPS
        ("10.0.0.5", 22),  # host:* is any port
        ("10.0.0.5", 65535),
        ("::1", 8080),
        ("[0:0:0:0:0:0:0:1]", 8080),  # an address compared as an address
    ],
)
def test_listed_hosts_and_ports_are_let_through(host: str, port: int) -> None:
    assert _allowed(host, port)


@pytest.mark.parametrize(
    ("host", "port"),
    [
        ("pypi.org", 80),  # a port names that port only
        ("github.com", 443),  # *.github.com is the names under it, not it
        ("evilgithub.com", 443),  # not a subdomain, only a suffix
        ("github.com.evil.org", 443),
        ("api.github.com", 22),
        ("files.example.com", 8080),  # a bare name is 80 and 443 only
        ("example.com", 443),
        ("10.0.0.6", 80),
        ("::2", 8080),
        ("pypi.org:443", 443),  # not a host at all
        ("", 443),
        ("pypi.org\r\nX-Injected: 1", 443),
    ],
)
def test_anything_else_is_refused(host: str, port: int) -> None:
    assert not _allowed(host, port)


def test_nothing_is_let_through_an_empty_list() -> None:
    assert not host_allowed([], "pypi.org", 443)


@pytest.mark.parametrize(
    ("entry", "rule", "shown"),
    [
        ("pypi.org:443", HostRule("pypi.org", ports=frozenset({443})), "pypi.org:443"),
        ("pypi.org", HostRule("pypi.org"), "pypi.org"),
        ("*.GitHub.com:443", HostRule("github.com", True, frozenset({443})), "*.github.com:443"),
        ("localhost:*", HostRule("localhost", ports=None), "localhost:*"),
        ("[::1]:8080", HostRule("::1", ports=frozenset({8080})), "[::1]:8080"),
        ("127.0.0.1:8000", HostRule("127.0.0.1", ports=frozenset({8000})), "127.0.0.1:8000"),
    ],
)
def test_entries_parse_and_read_back(entry: str, rule: HostRule, shown: str) -> None:
    assert parse_host_rule(entry) == rule
    assert str(rule) == shown


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ("*", "a \\* may only begin a name"),
        ("*.*.com", "a \\* may only begin a name"),
        ("git*.com:443", "a \\* may only begin a name"),
        ("pypi.org:0", "not a port"),
        ("pypi.org:https", "not a port"),
        ("pypi.org:70000", "not a port"),
        ("::1", "IPv6 address goes in brackets"),
        ("*.10.0.0.1", "a wildcard applies to names"),
        ("http://pypi.org", "not a port"),
        ("pypi org", "not a host name"),
        ("", "not a host name"),
    ],
)
def test_bad_entries_are_refused_with_the_form_to_use(entry: str, why: str) -> None:
    with pytest.raises(ValueError, match=why) as caught:
        parse_host_rule(entry)
    assert "host:port" in str(caught.value) and repr(entry) in str(caught.value)


def test_normalize_host_refuses_what_is_neither_name_nor_address() -> None:
    assert normalize_host("Example.COM.") == "example.com"
    assert normalize_host("[::ffff:7f00:1]") == "::ffff:7f00:1"
    for bad in ("a..b", "-a.com", "a" * 64 + ".com", "é.com", "a/b"):
        with pytest.raises(ValueError):
            normalize_host(bad)


def _forwards(*entries: str) -> list[str]:
    return [str(f) for f in loopback_forwards([parse_host_rule(e) for e in entries])]


def test_loopback_entries_with_ports_are_forwarded_at_their_own_address() -> None:
    assert _forwards("127.0.0.1:8080", "[0::1]:5432", "127.0.0.2:9000") == [
        "[::1]:5432=[::1]:5432",
        "127.0.0.1:8080=127.0.0.1:8080",
        "127.0.0.2:9000=127.0.0.2:9000",  # all of 127.0.0.0/8 is the loopback
    ]
    # A bare address means its ports 80 and 443, as a bare name does.
    assert _forwards("127.0.0.1") == ["127.0.0.1:80=127.0.0.1:80", "127.0.0.1:443=127.0.0.1:443"]


def test_localhost_is_forwarded_at_both_loopbacks_unless_an_address_is_listed() -> None:
    assert _forwards("LocalHost.:3000") == [
        "127.0.0.1:3000=localhost:3000",
        "[::1]:3000=localhost:3000",
    ]
    # The listed address is asked for as itself; the name takes the other loopback.
    assert _forwards("localhost:3000", "127.0.0.1:3000") == [
        "127.0.0.1:3000=127.0.0.1:3000",
        "[::1]:3000=localhost:3000",
    ]


def test_what_is_not_a_loopback_port_is_not_forwarded() -> None:
    assert (
        _forwards(
            "127.0.0.1:*",  # every port: the bridge cannot take them all
            "localhost:*",
            "10.0.0.5:8080",  # not a loopback address: reached through the proxy only
            "pypi.org:443",
            "*.localhost:80",
            "[::ffff:127.0.0.1]:8080",  # a mapped form, not an address the sandbox has
        )
        == []
    )
    forward = LoopbackForward(8080, "::1", "::1")
    assert (forward.port, forward.listen, str(forward)) == (8080, "::1", "[::1]:8080=[::1]:8080")
