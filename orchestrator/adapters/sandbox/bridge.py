"""The sandbox's side of the pod's network proxy: run inside the sandbox before the command.

    python -I -S bridge.py --socket PATH --tag TAG [--forward LISTEN=TARGET ...] -- COMMAND ...

It listens on a free port of the sandbox's own loopback, points the proxy variables
(``HTTPS_PROXY`` and the rest, :data:`PROXY_VARIABLES`) at it, forks a child that relays each
connection to the pod's proxy through the Unix socket ``PATH`` (bind-mounted into the
sandbox), and becomes the command (``exec``): the command keeps its process, exit code and
signals, and the relay dies with the sandbox's PID namespace (or notices that its parent
went).

Each ``--forward 127.0.0.1:8080=127.0.0.1:8080`` (``[::1]:8080=localhost:8080``) is an
allowed loopback ``host:port`` of the pod's side: the bridge also listens at ``LISTEN``
inside and relays each connection there to the proxy as ``CONNECT TARGET``, so a client
reaches it at the address it was given, without proxy settings (``NO_PROXY`` sends the
sandbox's loopback direct, where the command's own servers are). A forward that cannot
listen (a port below 1024 without the privilege) is said on stderr, once, and skipped.

The standard library only, and on the command's path the least of it (``_socket``, not
``socket``, whose import costs more than the interpreter's start): the command waits for the
listening sockets, never for the relay.
"""

from __future__ import annotations

import _socket
import errno
import os
import sys

TYPE_CHECKING = False  # typing's own costs an import on the command's path
if TYPE_CHECKING:
    import socket
    from collections.abc import Callable

PROXY_VARIABLES = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
)
"""Set to the bridge's address: curl, pip, git, Python, Go, Rust's reqwest, npm read them."""

NO_PROXY = "localhost,127.0.0.1,::1"
"""The sandbox's own loopback (a server the command starts) is reached directly."""

GREETING = b"POD-BRIDGE "
"""Kept equal to :data:`orchestrator.adapters.sandbox.proxy.GREETING` (a test checks): this script
imports nothing of the pod's."""

_CHUNK = 64 * 1024
_HEAD_MAX = 64 * 1024
_PARENT_CHECK_S = 1.0
_USAGE = "usage: bridge.py --socket PATH --tag TAG [--forward LISTEN=TARGET ...] -- COMMAND ...\n"
_ABSENT = (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT)
"""A forward to an address this sandbox does not have (no IPv6): nothing could connect to it
either, so it is skipped without a word."""

Forward = tuple[str, int, str]
"""(listen address, port, the ``host:port`` to ask the proxy for)."""


def _parse(argv: list[str]) -> tuple[str, str, list[Forward], list[str]]:
    """(socket path, tag, forwards, command) from the command line; exits 2 on a bad one."""
    try:
        split = argv.index("--")
    except ValueError:
        split = -1
    options, command = argv[:split], argv[split + 1 :]
    values: dict[str, str] = {}
    forwards: list[Forward] = []
    good = split >= 0 and bool(command) and not len(options) % 2
    for name, value in zip(options[::2], options[1::2], strict=False):
        if name == "--forward" and (forward := _forward(value)) is not None:
            forwards.append(forward)
        elif name in ("--socket", "--tag") and name not in values:
            values[name] = value
        else:
            good = False
    if not good or len(values) != 2:
        sys.stderr.write(_USAGE)
        raise SystemExit(2)
    return values["--socket"], values["--tag"], forwards, command


def _forward(text: str) -> Forward | None:
    """``127.0.0.1:8080=localhost:8080`` parsed; None when it is not that form."""
    listen, _, target = text.partition("=")
    host, _, port = listen.rpartition(":")
    if not (host and target and port.isdigit() and 0 < int(port) < 65536):
        return None
    return host.removeprefix("[").removesuffix("]"), int(port), target


def _listen(host: str, port: int) -> _socket.socket:
    """A socket listening at ``host:port`` of the sandbox's loopback (OSError if it cannot)."""
    family = _socket.AF_INET6 if ":" in host else _socket.AF_INET
    listener = _socket.socket(family, _socket.SOCK_STREAM)
    try:
        listener.bind((host, port))
        listener.listen(128)
    except OSError:
        listener.close()
        raise
    return listener


def main(argv: list[str]) -> None:
    """Listen, fork the relay, and become the command."""
    path, tag, forwards, command = _parse(argv)
    listener = _listen("127.0.0.1", 0)
    port = listener.getsockname()[1]
    listeners: list[tuple[_socket.socket, str | None]] = [(listener, None)]
    for host, number, target in forwards:
        try:
            listeners.append((_listen(host, number), target))
        except OSError as exc:
            if exc.errno not in _ABSENT:
                where = f"[{host}]:{number}" if ":" in host else f"{host}:{number}"
                sys.stderr.write(
                    f"pod sandbox: {where} is in [sandbox] network but cannot be reached at "
                    f"that address here ({exc.strerror}); through the pod's proxy it can: "
                    "unset NO_PROXY no_proxy\n"
                )
    parent = os.getpid()
    if os.fork() == 0:
        try:
            _relay(listeners, path, tag, parent)
        finally:
            os._exit(0)
    for held, _ in listeners:
        held.close()
    address = f"http://127.0.0.1:{port}"
    for name in PROXY_VARIABLES:
        os.environ[name] = address
    os.environ["NO_PROXY"] = os.environ["no_proxy"] = NO_PROXY
    # Node's own fetch reads the variables only when asked (Node 24 and later).
    os.environ["NODE_USE_ENV_PROXY"] = "1"
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        sys.stderr.write(f"{command[0]}: {exc.strerror}\n")
        raise SystemExit(127) from None


def _relay(
    listeners: list[tuple[_socket.socket, str | None]], path: str, tag: str, parent: int
) -> None:
    """Hand each connection to the pod's proxy, until the command (our parent) is gone: as it
    comes on the proxy variables' listener (the client speaks to a proxy), as a ``CONNECT``
    to its target on a forward's."""
    import select
    import socket
    import threading

    # The command's output is not ours to hold open: a reader waiting for its end would
    # wait for the relay too.
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    targets: dict[socket.socket, str | None] = {}
    for listener, target in listeners:
        server = socket.socket(fileno=listener.detach())
        server.setblocking(False)
        targets[server] = target
    greeting = GREETING + tag.replace("\n", " ").encode() + b"\n"
    while os.getppid() == parent:
        ready, _, _ = select.select(list(targets), [], [], _PARENT_CHECK_S)
        for server in ready:
            try:
                client, _ = server.accept()
            except OSError:
                continue  # gone before it was taken, or no descriptor free: not the end
            client.settimeout(None)
            args = (client, path, greeting, targets[server])
            threading.Thread(target=_connect, args=args, daemon=True).start()


def _connect(client: socket.socket, path: str, greeting: bytes, target: str | None) -> None:
    """Relay one connection both ways through the proxy's socket (through a tunnel to
    ``target`` when it came on a forward)."""
    import socket
    import threading

    proxy = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        proxy.connect(path)
        if target is None:
            proxy.sendall(greeting)
        else:
            early = _tunnel(proxy, greeting, target)
            if early is None:
                # Refused, or the host does not answer: as a connection to it would end.
                _reset(client)
                proxy.close()
                return
            client.sendall(early)
    except OSError as exc:
        if target is not None:
            _reset(client)
            proxy.close()
            return
        body = f"the sandbox's bridge cannot reach the pod's proxy: {exc}\n".encode()
        head = f"HTTP/1.1 502 Bad Gateway\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        _quietly(client.sendall, head + body)
        client.close()
        proxy.close()
        return
    back = threading.Thread(target=_pipe, args=(proxy, client), daemon=True)
    back.start()
    _pipe(client, proxy)
    back.join()
    client.close()
    proxy.close()


def _tunnel(proxy: socket.socket, greeting: bytes, target: str) -> bytes | None:
    """Ask the proxy for a tunnel to ``target``: the bytes the host already sent after the
    proxy's ``200`` (a server that speaks first), or None when the proxy said no."""
    proxy.sendall(greeting + f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        data = proxy.recv(_CHUNK)
        if not data or len(head) > _HEAD_MAX:
            return None
        head += data
    status, _, rest = head.partition(b"\r\n\r\n")
    words = status.split(b" ", 2)
    return rest if len(words) > 1 and words[1] == b"200" else None


def _reset(client: socket.socket) -> None:
    """Close ``client`` with a reset: the client sees its connection refused midway."""
    import socket
    import struct

    _quietly(client.setsockopt, socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    client.close()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    """Copy until ``source`` ends, then end ``sink``'s sending side (a half-close)."""
    import socket

    try:
        while data := source.recv(_CHUNK):
            sink.sendall(data)
    except OSError:
        pass
    _quietly(sink.shutdown, socket.SHUT_WR)


def _quietly(call: Callable[..., object], *args: object) -> None:
    import contextlib

    with contextlib.suppress(OSError):
        call(*args)


if __name__ == "__main__":
    main(sys.argv[1:])
