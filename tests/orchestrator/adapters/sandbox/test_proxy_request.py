"""What the proxy reads from a request's head, and what it sends on (pure)."""

from __future__ import annotations

import pytest

from orchestrator.adapters.sandbox.proxy_request import (
    BadProxyRequest,
    ProxyRequest,
    parse_request_head,
    response,
)


def _head(*lines: str) -> bytes:
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def test_connect_names_the_tunnel_s_host_and_port() -> None:
    request = parse_request_head(_head("CONNECT PyPI.org:443 HTTP/1.1", "Host: pypi.org:443"))
    assert request == ProxyRequest(host="pypi.org", port=443, tunnel=True)
    v6 = parse_request_head(_head("CONNECT [::1]:8443 HTTP/1.1"))
    assert (v6.host, v6.port, v6.authority) == ("::1", 8443, "[::1]:8443")


def test_plain_http_is_sent_on_in_origin_form_for_one_request() -> None:
    request = parse_request_head(
        _head(
            "POST http://user:pw@Example.com:8080/a/b?q=1 HTTP/1.1",
            "Host: elsewhere.org",
            "Proxy-Connection: keep-alive",
            "Proxy-Authorization: Basic eA==",
            "Connection: keep-alive, X-Private",
            "X-Private: 1",
            "Content-Length: 3",
            "Accept: */*",
        )
    )
    assert (request.host, request.port, request.tunnel) == ("example.com", 8080, False)
    assert request.head == _head(
        "POST /a/b?q=1 HTTP/1.1",
        "Host: example.com:8080",  # the host connected to, whatever the client said
        "Content-Length: 3",
        "Accept: */*",
        "Connection: close",
    )


def test_plain_http_defaults_to_port_80_and_the_root() -> None:
    request = parse_request_head(_head("GET http://example.com HTTP/1.0"))
    assert (request.port, request.head) == (
        80,
        _head("GET / HTTP/1.0", "Host: example.com", "Connection: close"),
    )


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("GET /relative HTTP/1.1", "a proxy takes http://host/path"),
        ("GET https://example.com/ HTTP/1.1", "a proxy takes http://host/path"),
        ("CONNECT example.com HTTP/1.1", "has no port"),
        ("CONNECT example.com:99999 HTTP/1.1", "not a port"),
        ("CONNECT exa mple.com:443 HTTP/1.1", "not an HTTP/1 request line"),
        ("CONNECT bad_host!:443 HTTP/1.1", "not a host name"),
        ("HELLO", "not an HTTP/1 request line"),
        ("GET http://example.com/ HTTP/2", "not an HTTP/1 request line"),
    ],
)
def test_what_a_forward_proxy_does_not_serve_is_a_bad_request(line: str, why: str) -> None:
    with pytest.raises(BadProxyRequest, match=why):
        parse_request_head(_head(line))


def test_a_header_line_without_a_name_is_a_bad_request() -> None:
    with pytest.raises(BadProxyRequest, match="not a header line"):
        parse_request_head(_head("GET http://example.com/ HTTP/1.1", " folded: value"))


def test_the_proxy_s_own_responses_are_whole() -> None:
    raw = response(403, "Forbidden: x:1 is not in [sandbox] network", "blocked ✓\n")
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.split(b"\r\n")[0] == b"HTTP/1.1 403 Forbidden: x:1 is not in [sandbox] network"
    assert b"Content-Length: %d" % len(body) in head and b"Connection: close" in head
    assert body.decode() == "blocked ✓\n"
