"""The sandbox's side of the pod's network proxy: run inside the sandbox before the command.

    python -I -S bridge.py --socket PATH --tag TAG -- COMMAND [ARGS...]

It listens on a free port of the sandbox's own loopback, points the proxy variables
(``HTTPS_PROXY`` and the rest, :data:`PROXY_VARIABLES`) at it, forks a child that relays each
connection to the pod's proxy through the Unix socket ``PATH`` (bind-mounted into the
sandbox), and becomes the command (``exec``): the command keeps its process, exit code and
signals, and the relay dies with the sandbox's PID namespace (or notices that its parent
went).

The standard library only, and on the command's path the least of it (``_socket``, not
``socket``, whose import costs more than the interpreter's start): the command waits for the
listening socket, never for the relay.
"""

from __future__ import annotations

import _socket
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
"""Kept equal to :data:`orchestrator.sandbox.proxy.GREETING` (a test checks): this script
imports nothing of the pod's."""

_CHUNK = 64 * 1024
_PARENT_CHECK_S = 1.0


def _parse(argv: list[str]) -> tuple[str, str, list[str]]:
    """(socket path, tag, command) from the command line; exits 2 on a bad one."""
    try:
        split = argv.index("--")
    except ValueError:
        split = -1
    options, command = argv[:split], argv[split + 1 :]
    values = dict(zip(options[::2], options[1::2], strict=False))
    if split < 0 or not command or len(options) % 2 or set(values) != {"--socket", "--tag"}:
        sys.stderr.write("usage: bridge.py --socket PATH --tag TAG -- COMMAND [ARGS...]\n")
        raise SystemExit(2)
    return values["--socket"], values["--tag"], command


def main(argv: list[str]) -> None:
    """Listen, fork the relay, and become the command."""
    path, tag, command = _parse(argv)
    listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    port = listener.getsockname()[1]
    parent = os.getpid()
    if os.fork() == 0:
        try:
            _relay(listener, path, tag, parent)
        finally:
            os._exit(0)
    listener.close()
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


def _relay(listener: _socket.socket, path: str, tag: str, parent: int) -> None:
    """Hand each connection to the pod's proxy, until the command (our parent) is gone."""
    import socket
    import threading

    # The command's output is not ours to hold open: a reader waiting for its end would
    # wait for the relay too.
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    server = socket.socket(fileno=listener.detach())
    server.settimeout(_PARENT_CHECK_S)
    greeting = GREETING + tag.replace("\n", " ").encode() + b"\n"
    while os.getppid() == parent:
        try:
            client, _ = server.accept()
        except TimeoutError:
            continue
        client.settimeout(None)
        threading.Thread(target=_connect, args=(client, path, greeting), daemon=True).start()


def _connect(client: socket.socket, path: str, greeting: bytes) -> None:
    """Relay one connection both ways through the proxy's socket."""
    import socket
    import threading

    proxy = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        proxy.connect(path)
        proxy.sendall(greeting)
    except OSError as exc:
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
