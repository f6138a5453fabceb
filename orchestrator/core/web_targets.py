"""What ``web_fetch`` may be pointed at: a URL taken apart, and ``domain:`` rule patterns (pure).

A URL is parsed once, by :func:`fetch_target`, with httpx's own parser, so that the host the
permission rules see is exactly the host the fetcher connects to (an IDNA name in its ASCII
form, an address in its canonical form, without case or a trailing dot). What is refused
before anything is resolved:

* a scheme other than ``http`` and ``https`` (``file:``, ``ftp:``, ``gopher:``…);
* credentials in the URL (``https://user:secret@host/``): the pod would send them to the host
  and keep them in the session file, and the model has no business holding them;
* a port on the Fetch standard's list of "bad ports" (:data:`BAD_PORTS`), the ones browsers
  refuse because an HTTP request sent there can be read as another protocol's commands (SMTP,
  IRC, X11…). Any other port is allowed: documentation is served on 8080 too.

A rule's subject is ``domain:<pattern>``: ``docs.python.org`` (that host), ``*.python.org``
(any name under it, not ``python.org`` itself: list both when both are meant), or ``*`` (any
host), as :mod:`orchestrator.core.hosts` reads ``[sandbox] network`` names.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.core.hosts import normalize_host

__all__ = [
    "BAD_PORTS",
    "DOMAIN_PREFIX",
    "FetchTarget",
    "domain_matches",
    "domain_pattern",
    "fetch_target",
    "host_of",
]

DOMAIN_PREFIX = "domain:"
"""How a ``web_fetch`` rule's subject begins: ``web_fetch(domain:docs.python.org)``."""

BAD_PORTS = frozenset(
    {
        *(0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79),
        *(87, 95, 101, 102, 103, 104, 109, 110, 111, 113, 115, 117, 119, 123, 135, 137, 139),
        *(143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532, 540, 548),
        *(554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049, 3659),
        *(4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697),
        *(10080,),
    }
)
"""The Fetch standard's "bad ports" (https://fetch.spec.whatwg.org/#port-blocking), and 0."""


@dataclass(frozen=True, slots=True)
class FetchTarget:
    """A URL ``web_fetch`` may request, taken apart."""

    url: str
    """The URL as it will be requested (httpx's normal form)."""
    host: str
    """The host as rules compare it (see :func:`orchestrator.core.hosts.normalize_host`)."""
    raw_host: str
    """The host as the HTTP client hands it to the network (what a connection is pinned by)."""
    port: int
    scheme: str


def fetch_target(text: str) -> FetchTarget:
    """``text`` as a URL ``web_fetch`` may request; ValueError saying why not."""
    import httpx  # the parser the fetcher uses, so both read a URL alike

    try:
        url = httpx.URL(text.strip())
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise ValueError(f"not a URL web_fetch can request ({exc})") from None
    if url.scheme not in ("http", "https"):
        shown = f"{url.scheme!r}" if url.scheme else "no scheme"
        raise ValueError(f"only http and https URLs are fetched, not {shown}")
    if url.userinfo:
        raise ValueError(
            "a URL with credentials (user:password@) is refused: they would be sent to the "
            "host and kept in the session"
        )
    raw_host = url.raw_host.decode("ascii")
    if not raw_host:
        raise ValueError("the URL names no host")
    try:
        host = normalize_host(raw_host)
    except ValueError:
        raise ValueError(f"{raw_host!r} is not a host name or an IP address") from None
    port = url.port or (443 if url.scheme == "https" else 80)
    if port in BAD_PORTS:
        raise ValueError(
            f"port {port} is refused: browsers refuse it too, as an HTTP request there can be "
            "read as another protocol's commands"
        )
    return FetchTarget(url=str(url), host=host, raw_host=raw_host, port=port, scheme=url.scheme)


def host_of(text: str) -> str | None:
    """The host a URL names, as rules compare it; None when ``web_fetch`` would refuse it."""
    try:
        return fetch_target(text).host
    except ValueError:
        return None


def domain_pattern(subject: str) -> str:
    """A rule's ``domain:`` subject as a normalized pattern (``*``, ``*.name`` or a host);
    ValueError saying what is wrong."""
    if not subject.startswith(DOMAIN_PREFIX):
        raise ValueError(
            f"a web_fetch rule names a domain, as in web_fetch({DOMAIN_PREFIX}docs.python.org)"
        )
    pattern = subject[len(DOMAIN_PREFIX) :].strip()
    if pattern == "*":
        return pattern
    wildcard = pattern.startswith("*.")
    name = pattern[2:] if wildcard else pattern
    if "*" in name:
        raise ValueError(f"{subject!r}: a * may only begin a domain, as in *.python.org")
    try:
        normal = normalize_host(name.encode("idna").decode("ascii"))
    except (ValueError, UnicodeError):
        raise ValueError(f"{subject!r}: {name!r} is not a host name or an IP address") from None
    return f"*.{normal}" if wildcard else normal


def domain_matches(pattern: str, host: str) -> bool:
    """Whether a normalized pattern (:func:`domain_pattern`) covers a normalized host."""
    if pattern == "*":
        return True
    if pattern.startswith("*."):
        return host.endswith(pattern[1:])
    return host == pattern
