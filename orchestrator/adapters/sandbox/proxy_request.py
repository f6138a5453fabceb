"""What a client asks the pod's proxy for, read from the head of its request (pure).

Two forms reach a forward proxy: ``CONNECT host:port`` (HTTPS, and any TLS: the client then
speaks through the tunnel; the proxy never sees inside it) and an absolute-form request
(``GET http://host/path``: plain HTTP). The second is passed on in origin form, with the
proxy's own headers taken out, ``Host`` set to the host connected to, and
``Connection: close``: one request per connection, so a second request on it can never reach
another host than the one that was checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from orchestrator.core.hosts import normalize_host, parse_port, split_host_port
from orchestrator.errors import PodRuntimeError

HEAD_MAX_BYTES = 64 * 1024
"""The longest request head read; longer is refused (431)."""

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authorization",
        "proxy-authenticate",
        "te",
        "trailer",
        "upgrade",
    }
)
"""Headers meant for the proxy or for one hop, not for the host (RFC 9110 §7.6.1)."""


class BadProxyRequest(PodRuntimeError):
    """A request the proxy cannot make sense of; the message says what is wrong (sent back
    as a 400)."""


@dataclass(frozen=True, slots=True)
class ProxyRequest:
    """Where a client wants to go, and what to send there first."""

    host: str
    """Normalized (:func:`orchestrator.core.hosts.normalize_host`)."""
    port: int
    tunnel: bool
    """``CONNECT``: answer 200 and relay bytes both ways."""
    head: bytes = b""
    """For plain HTTP: the request head to send to the host (nothing for a tunnel)."""

    @property
    def authority(self) -> str:
        """``host:port`` as people read it (an IPv6 address in brackets)."""
        return authority(self.host, self.port)


def authority(host: str, port: int) -> str:
    """``host:port``, an IPv6 address in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def parse_request_head(head: bytes) -> ProxyRequest:
    """The request whose head (request line and headers, up to the blank line) is ``head``;
    :class:`BadProxyRequest` when it is not one a forward proxy serves."""
    try:
        text = head.decode("latin-1")
    except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes any bytes
        raise BadProxyRequest("the request head is not text") from None
    line, *fields = text.removesuffix("\r\n\r\n").split("\r\n")
    parts = line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadProxyRequest(f"not an HTTP/1 request line: {line[:100]!r}")
    method, target, version = parts
    if method == "CONNECT":
        host, port = _authority(target)
        return ProxyRequest(host=host, port=port, tunnel=True)
    url = urlsplit(target)
    if url.scheme.lower() != "http" or not url.netloc:
        raise BadProxyRequest(
            f"{target[:100]!r}: a proxy takes http://host/path, or CONNECT host:port for HTTPS"
        )
    host, port = _authority(url.netloc.rpartition("@")[2], default_port=80)
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    lines = [f"{method} {path} {version}", f"Host: {authority(host, port).removesuffix(':80')}"]
    lines += [*_forwarded(fields), "Connection: close"]
    head_out = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return ProxyRequest(host=host, port=port, tunnel=False, head=head_out)


def _authority(text: str, default_port: int | None = None) -> tuple[str, int]:
    try:
        host, port = split_host_port(text)
        if port is not None:
            return normalize_host(host), parse_port(port)
        if default_port is None:
            raise ValueError(f"{text!r} has no port")
        return normalize_host(host), default_port
    except ValueError as exc:
        raise BadProxyRequest(str(exc)) from None


def _forwarded(fields: list[str]) -> list[str]:
    """The header lines to pass on: without the hop-by-hop ones, those ``Connection`` names,
    and ``Host`` (set from the URL)."""
    named: list[tuple[str, str]] = []
    for field in fields:
        name, colon, _ = field.partition(":")
        if not colon or not name or name != name.strip():
            raise BadProxyRequest(f"not a header line: {field[:100]!r}")
        named.append((name.lower(), field))
    dropped = set(_HOP_BY_HOP) | {"host"}
    for name, field in named:
        if name == "connection":
            dropped |= {token.strip().lower() for token in field.partition(":")[2].split(",")}
    return [field for name, field in named if name not in dropped]


def response(status: int, reason: str, body: str = "") -> bytes:
    """A whole response the proxy itself gives (a refusal, an error), closing the
    connection."""
    payload = body.encode("utf-8")
    head = (
        f"HTTP/1.1 {status} {reason}\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(payload)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode("latin-1", errors="replace") + payload
