"""Where the HTTP API listens and where it says so: ``[HOST:]PORT``, and the 0600 ``_http.json``
a client reads the URL and the token from (docs/http.md).

Light on purpose (no FastAPI): the CLI parses ``--http`` with it before anything heavy is
imported, and a client (the SDK, the tests) finds a running API with :func:`read_http_info`.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.config.paths import runtime_dir
from orchestrator.errors import SetupError

__all__ = [
    "HttpAddress",
    "HttpAddressError",
    "host_http_info_path",
    "parse_http_address",
    "pod_http_info_path",
    "read_http_info",
    "remove_http_info",
    "write_http_info",
]

DEFAULT_HOST = "127.0.0.1"


class HttpAddressError(SetupError):
    """An ``--http`` / ``host.http`` value that is no ``[HOST:]PORT``, or a non-loopback
    address without ``--http-public``; the message says what to give."""


@dataclass(frozen=True, slots=True)
class HttpAddress:
    """Where to listen: an IP address (never a name: the ``Host`` check compares it) and a
    port (0: any free one)."""

    host: str
    port: int

    @property
    def loopback(self) -> bool:
        """Whether only this machine can connect."""
        return ipaddress.ip_address(self.host).is_loopback


def parse_http_address(value: str, *, public: bool = False) -> HttpAddress:
    """``PORT``, ``HOST:PORT`` or ``[V6]:PORT`` (HOST an IP address, or ``localhost``);
    :class:`HttpAddressError` for anything else, and for a non-loopback host unless
    ``public``."""
    text = value.strip()
    host, port_text = DEFAULT_HOST, text
    if text.startswith("["):
        inside, _, rest = text[1:].partition("]")
        if not rest.startswith(":"):
            raise HttpAddressError(f"--http {value!r}: expected [ADDRESS]:PORT for IPv6")
        host, port_text = inside, rest[1:]
    elif ":" in text:
        host, _, port_text = text.rpartition(":")
    if host == "localhost":
        host = DEFAULT_HOST
    try:
        host = str(ipaddress.ip_address(host))
    except ValueError:
        raise HttpAddressError(
            f"--http {value!r}: {host!r} is not an IP address (give 127.0.0.1:PORT, or an "
            "address of this machine with --http-public)"
        ) from None
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise HttpAddressError(f"--http {value!r}: {port_text!r} is not a port (0 to 65535)")
    address = HttpAddress(host, int(port_text))
    if not address.loopback and not public:
        raise HttpAddressError(
            f"--http {value!r} listens beyond this machine: add --http-public to mean it "
            "(the API speaks plain HTTP; TLS in front of it is yours to put)"
        )
    return address


def host_http_info_path() -> Path:
    """The ``_http.json`` of this user's host's API (in the runtime dir, which every sandbox
    hides; ``_`` because no pod name starts with it: a pod named ``http`` has its own
    ``http.json`` there, ``pod ls``'s info file)."""
    return runtime_dir() / "_http.json"


def pod_http_info_path(socket: Path) -> Path:
    """The info file of ``pod serve --http`` on ``socket``: ``_http-<name>.sock.json``
    beside a socket of the runtime dir (never a pod's own ``<name>.json``); for a socket elsewhere, a file of the runtime dir named
    by a hash of its path (never beside a socket in a project, where a sandboxed command could
    read it)."""
    base = runtime_dir()
    absolute = Path(os.path.abspath(socket))
    if absolute.parent == Path(os.path.abspath(base)):
        return base / f"_http-{absolute.name}.json"
    digest = hashlib.sha256(os.fsencode(absolute)).hexdigest()[:16]
    return base / f"_sock-{digest}.http.json"


def write_http_info(path: Path, url: str, token: str) -> None:
    """Write ``{"url", "token", "pid"}`` to ``path``, created 0600 (never through a link,
    never readable by anyone else even for a moment)."""
    data = json.dumps({"url": url, "token": token, "pid": os.getpid()}).encode()
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def remove_http_info(path: Path, token: str) -> None:
    """Remove ``path`` if it is still ours (holds ``token``): a later server's is left."""
    info = read_http_info(path)
    if info is not None and info.get("token") == token:
        with contextlib.suppress(OSError):
            path.unlink()


def read_http_info(path: Path | None = None) -> dict[str, Any] | None:
    """The ``{"url", "token", "pid"}`` of a running API (default: the host's); None when
    there is none."""
    try:
        data = json.loads((path or host_http_info_path()).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
