"""URLs web_fetch takes, and the domain patterns of its rules."""

from __future__ import annotations

import pytest

from orchestrator.core.web_targets import (
    domain_matches,
    domain_pattern,
    fetch_target,
    host_of,
)


@pytest.mark.parametrize(
    ("url", "host", "port"),
    [
        ("https://Docs.Python.org./3/", "docs.python.org", 443),
        ("http://example.com:8080/x?q=1", "example.com", 8080),
        ("http://bücher.de/", "xn--bcher-kva.de", 80),
        ("http://[::FFFF:127.0.0.1]/", "::ffff:7f00:1", 80),
        ("  https://example.com  ", "example.com", 443),
    ],
)
def test_hosts_are_read_as_the_client_reads_them(url: str, host: str, port: int) -> None:
    target = fetch_target(url)
    assert (target.host, target.port) == (host, port)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("file:///etc/passwd", "only http and https"),
        ("ftp://example.com/", "only http and https"),
        ("example.com/page", "only http and https"),
        ("https://user:secret@example.com/", "credentials"),
        ("https://example.com:25/", "port 25 is refused"),
        ("http://example.com:6667/", "port 6667"),
        ("http:///nohost", "no host"),
    ],
)
def test_refused_urls_say_why(url: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        fetch_target(url)
    assert host_of(url) is None


@pytest.mark.parametrize(
    ("subject", "pattern"),
    [
        ("domain:Docs.Python.org", "docs.python.org"),
        ("domain:*.python.org", "*.python.org"),
        ("domain:*", "*"),
        ("domain:127.0.0.1", "127.0.0.1"),
        ("domain:[::1]", "::1"),
        ("domain:bücher.de", "xn--bcher-kva.de"),
    ],
)
def test_domain_patterns_are_normalized(subject: str, pattern: str) -> None:
    assert domain_pattern(subject) == pattern


@pytest.mark.parametrize(
    "subject", ["docs.python.org", "domain:py*.org", "domain:", "domain:a..b", "path:/x"]
)
def test_bad_domain_patterns_are_refused(subject: str) -> None:
    with pytest.raises(ValueError):
        domain_pattern(subject)


def test_wildcards_cover_names_below_not_the_name_itself() -> None:
    assert domain_matches("*.python.org", "docs.python.org")
    assert domain_matches("*.python.org", "a.b.python.org")
    assert not domain_matches("*.python.org", "python.org")
    assert not domain_matches("*.python.org", "evilpython.org")
    assert not domain_matches("docs.python.org", "docs.python.org.evil.com")
    assert domain_matches("*", "anything.example")
