"""The pod's network proxy, for real: a sandbox made by ``bwrap`` whose only way out is the
bridge to the proxy, test servers on 127.0.0.1, and the proxy's socket spoken to directly."""

from __future__ import annotations

import asyncio
import shlex
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from orchestrator.adapters.sandbox import bridge
from orchestrator.adapters.sandbox.bwrap import (
    SandboxSpec,
    SandboxUnavailable,
    bridged,
    find_bwrap,
    sandbox_argv,
)
from orchestrator.adapters.sandbox.proxy import BRIDGE, GREETING, NetworkProxy, ProxyStartError
from orchestrator.core.hosts import loopback_forwards, parse_host_rule
from tests.orchestrator.adapters.sandbox.web import hello_server


@pytest.fixture
def web() -> Iterator[int]:
    """An HTTP server on the host's 127.0.0.1; its port."""
    with hello_server() as port:
        yield port


@pytest.fixture
def other_web() -> Iterator[int]:
    """A second server, on a port not in the list."""
    with hello_server() as port:
        yield port


@pytest.fixture
async def proxy(web: int, short_dir: Path) -> AsyncIterator[NetworkProxy]:
    started = await NetworkProxy.start([parse_host_rule(f"127.0.0.1:{web}")], short_dir)
    yield started
    await started.close()


def _bwrap() -> str:
    try:
        return find_bwrap()
    except SandboxUnavailable as exc:
        pytest.skip(f"no working bubblewrap here: {exc}")


async def _sandboxed(
    proxy: NetworkProxy, workspace: Path, script: str, tag: str = "t", *, forward: bool = False
) -> str:
    """Run ``script`` with bash in a sandbox whose way out is ``proxy``; its output.
    ``forward``: the proxy's loopback entries are reached at their own address inside."""
    forwards = loopback_forwards(proxy.rules) if forward else ()
    spec = SandboxSpec(workspace=workspace, proxy=proxy.folder, forwards=forwards)
    argv = sandbox_argv(_bwrap(), spec, ["/bin/bash", "-c", script], tag=tag)
    process = await asyncio.create_subprocess_exec(
        *argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    out, _ = await asyncio.wait_for(process.communicate(), 30)
    return out.decode(errors="replace")


# The test servers are on the host's loopback, which the sandbox's own loopback hides: inside,
# they are hosts like any other, reached through the proxy (NO_PROXY names the sandbox's own).
_VIA_PROXY = "unset NO_PROXY no_proxy; "
_URLOPEN = (
    f"{shlex.quote(sys.executable)} -c 'import sys, urllib.request as u\n"
    'try: print(u.urlopen(sys.argv[1], timeout=10).read().decode(), end="")\n'
    'except Exception as e: print("failed:", e, getattr(e, "read", lambda: b"")().decode())\''
)


async def test_an_allowed_host_is_reached_through_the_proxy_and_others_are_refused(
    proxy: NetworkProxy, web: int, other_web: int, tmp_path: Path
) -> None:
    script = _VIA_PROXY + "; ".join(
        [
            f"{_URLOPEN} http://127.0.0.1:{web}/allowed",
            f"{_URLOPEN} http://127.0.0.1:{other_web}/refused",
            f"{_URLOPEN} https://example.invalid/tls",
        ]
    )
    out = await _sandboxed(proxy, tmp_path, script, tag="call-1")
    assert out.startswith(f"hello /allowed (Host: 127.0.0.1:{web})\n")
    # Plain HTTP: the 403's reason and body both say why.
    assert (
        f"failed: HTTP Error 403: Forbidden: 127.0.0.1:{other_web} is not in [sandbox] network "
        f"blocked by the sandbox: 127.0.0.1:{other_web} is not in [sandbox] network, so the "
        f"pod's proxy refused it (allowed: 127.0.0.1:{web})."
    ) in out
    # HTTPS: the tunnel is refused before any name is looked up; the reason says why.
    assert (
        "failed: <urlopen error Tunnel connection failed: 403 Forbidden: "
        "example.invalid:443 is not in [sandbox] network>"
    ) in out
    assert proxy.refused("call-1") == [f"127.0.0.1:{other_web}", "example.invalid:443"]
    assert proxy.refused("call-1") == []  # read once
    assert proxy.refused("another-call") == []


@pytest.mark.skipif(shutil.which("curl") is None, reason="no curl here")
async def test_curl_goes_through_the_proxy_and_says_the_tunnel_was_refused(
    proxy: NetworkProxy, web: int, tmp_path: Path
) -> None:
    out = await _sandboxed(
        proxy,
        tmp_path,
        _VIA_PROXY
        + f"curl -sS http://127.0.0.1:{web}/curl; curl -sS https://pypi.org/; echo rc=$?",
    )
    assert f"hello /curl (Host: 127.0.0.1:{web})" in out
    assert "CONNECT tunnel failed, response 403" in out and "rc=56" in out


async def test_raw_connections_and_dns_stay_blocked_beside_the_proxy(
    proxy: NetworkProxy, web: int, tmp_path: Path
) -> None:
    probe = (
        f"{shlex.quote(sys.executable)} -I -c 'import socket\n"
        'for target in [("127.0.0.1", {port}), ("example.com", 80)]:\n'
        '    try: socket.create_connection(target, timeout=5); print("connected")\n'
        '    except OSError as e: print("refused:", e)\''
    ).replace("{port}", str(web))
    out = await _sandboxed(proxy, tmp_path, probe)
    host_loopback, name = out.splitlines()
    assert host_loopback.startswith("refused:")  # the sandbox's 127.0.0.1 is its own
    assert name.startswith("refused:") and "connected" not in out


async def test_the_command_sees_the_proxy_variables_and_keeps_its_exit_code(
    proxy: NetworkProxy, tmp_path: Path
) -> None:
    out = await _sandboxed(
        proxy, tmp_path, 'echo "$HTTPS_PROXY $http_proxy $ALL_PROXY $NO_PROXY"; exit 7'
    )
    https, http_, all_, no_proxy = out.split()
    assert https == http_ == all_ and https.startswith("http://127.0.0.1:")
    assert no_proxy == "localhost,127.0.0.1,::1"
    spec = SandboxSpec(workspace=tmp_path, proxy=proxy.folder)
    argv = sandbox_argv(_bwrap(), spec, ["/bin/bash", "-c", "exit 7"])
    done = await asyncio.create_subprocess_exec(*argv)
    assert await done.wait() == 7


async def _ask(proxy: NetworkProxy, *lines: bytes) -> bytes:
    """Send ``lines`` on the proxy's socket and read what it says until it closes."""
    reader, writer = await asyncio.open_unix_connection(proxy.socket)
    writer.write(b"".join(lines))
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return answer


async def test_a_client_that_does_not_greet_is_told_to_use_the_bridge(
    proxy: NetworkProxy, web: int
) -> None:
    answer = await _ask(proxy, f"CONNECT 127.0.0.1:{web} HTTP/1.1\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 400 Bad Request")
    assert b"connect through the sandbox's bridge" in answer


async def test_a_tunnel_relays_bytes_both_ways_and_a_half_close(short_dir: Path) -> None:
    async def shout(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        data = await reader.read()  # to the client's end of sending
        writer.write(data.upper())
        writer.close()

    server = await asyncio.start_server(shout, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    proxy = await NetworkProxy.start([parse_host_rule(f"127.0.0.1:{port}")], short_dir)
    try:
        reader, writer = await asyncio.open_unix_connection(proxy.socket)
        writer.write(GREETING + b"t\n" + f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
        assert await reader.readuntil(b"\r\n\r\n") == b"HTTP/1.1 200 Connection established\r\n\r\n"
        writer.write(b"through the tunnel")
        writer.write_eof()
        assert await asyncio.wait_for(reader.read(), 10) == b"THROUGH THE TUNNEL"
        writer.close()
    finally:
        await proxy.close()
        server.close()


async def test_an_allowed_host_that_does_not_answer_is_a_502(
    short_dir: Path, unused_tcp_port: int
) -> None:
    proxy = await NetworkProxy.start([parse_host_rule(f"127.0.0.1:{unused_tcp_port}")], short_dir)
    try:
        answer = await _ask(
            proxy,
            GREETING + b"t\n",
            f"CONNECT 127.0.0.1:{unused_tcp_port} HTTP/1.1\r\n\r\n".encode(),
        )
    finally:
        await proxy.close()
    assert answer.startswith(b"HTTP/1.1 502 Bad Gateway")
    assert f"cannot reach 127.0.0.1:{unused_tcp_port}".encode() in answer


async def test_closing_ends_open_tunnels_and_removes_the_socket(short_dir: Path) -> None:
    held: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        await reader.read()

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    proxy = await NetworkProxy.start([parse_host_rule(f"127.0.0.1:{port}")], short_dir)
    reader, writer = await asyncio.open_unix_connection(proxy.socket)
    writer.write(GREETING + b"t\n" + f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
    await reader.readuntil(b"\r\n\r\n")
    await asyncio.wait_for(proxy.close(), 10)
    assert await asyncio.wait_for(reader.read(), 10) == b""  # the tunnel ended
    assert not proxy.folder.exists()
    writer.close()
    server.close()


async def test_a_proxy_that_cannot_listen_says_where(tmp_path: Path) -> None:
    with pytest.raises(ProxyStartError, match="cannot start the sandbox's network proxy"):
        await NetworkProxy.start([], tmp_path / "missing")


def test_the_bridge_runs_the_command_or_says_why_not(tmp_path: Path) -> None:
    assert bridge.GREETING == GREETING  # the script cannot import the pod's constant
    argv = bridged(["/no/such/program"], "t")
    argv[3] = str(BRIDGE)  # here, outside a sandbox
    argv[argv.index("--socket") + 1] = str(tmp_path / "none.sock")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 127 and "/no/such/program" in done.stderr
    usage = subprocess.run(argv[:4], capture_output=True, text=True, timeout=30, check=False)
    assert usage.returncode == 2 and "usage: bridge.py" in usage.stderr
    for bad in ("127.0.0.1=127.0.0.1:80", "127.0.0.1:0=x:0", "127.0.0.1:80"):
        wrong = [*argv[:4], "--socket", "s", "--tag", "t", "--forward", bad, "--", "true"]
        done = subprocess.run(wrong, capture_output=True, text=True, timeout=30, check=False)
        assert done.returncode == 2 and "usage: bridge.py" in done.stderr, bad


def test_a_forward_that_cannot_listen_is_said_once_and_the_command_runs(
    web: int, tmp_path: Path
) -> None:
    # Outside a sandbox, the test server holds the port the bridge is asked to take.
    argv = bridged(
        ["/bin/sh", "-c", "echo ran; exit 3"],
        "t",
        loopback_forwards([parse_host_rule(f"127.0.0.1:{web}")]),
    )
    argv[3] = str(BRIDGE)
    argv[argv.index("--socket") + 1] = str(tmp_path / "none.sock")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    assert (done.returncode, done.stdout) == (3, "ran\n")
    assert done.stderr == (
        f"pod sandbox: 127.0.0.1:{web} is in [sandbox] network but cannot be reached at that "
        "address here (Address already in use); through the pod's proxy it can: unset "
        "NO_PROXY no_proxy\n"
    )


async def test_a_forward_carries_any_protocol_and_what_the_server_says_first(
    short_dir: Path, tmp_path: Path
) -> None:
    async def banner(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"220 ready\r\n")  # a server that speaks first (SMTP, a database)
        await writer.drain()
        writer.write((await reader.readline()).upper())
        writer.close()

    server = await asyncio.start_server(banner, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    proxy = await NetworkProxy.start([parse_host_rule(f"127.0.0.1:{port}")], short_dir)
    client = (
        f"{shlex.quote(sys.executable)} -I -c 'import socket\n"
        'c = socket.create_connection(("127.0.0.1", {port}), timeout=10)\n'
        'f = c.makefile("rwb")\n'
        "print(f.readline().decode().strip())\n"
        'f.write(b"hello there\\n"); f.flush()\n'
        "print(f.readline().decode().strip())'"
    ).replace("{port}", str(port))
    try:
        out = await _sandboxed(proxy, tmp_path, client, tag="raw", forward=True)
    finally:
        await proxy.close()
        server.close()
    assert out == "220 ready\nHELLO THERE\n"
    assert proxy.refused("raw") == []


async def test_an_ipv6_loopback_entry_is_reached_at_its_own_address(
    short_dir: Path, tmp_path: Path
) -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"v6 here\n")
        writer.close()

    try:
        server = await asyncio.start_server(answer, "::1", 0)
    except OSError as exc:
        pytest.skip(f"no IPv6 loopback here: {exc}")
    port = server.sockets[0].getsockname()[1]
    proxy = await NetworkProxy.start([parse_host_rule(f"[::1]:{port}")], short_dir)
    probe = (
        f"{shlex.quote(sys.executable)} -I -c 'import socket\n"
        'c = socket.create_connection(("::1", {port}), timeout=10)\n'
        'print(c.makefile().readline(), end="")\''
    ).replace("{port}", str(port))
    try:
        out = await _sandboxed(proxy, tmp_path, probe, forward=True)
    finally:
        await proxy.close()
        server.close()
    assert out == "v6 here\n"


async def test_a_forward_to_a_host_that_does_not_answer_is_reset(
    short_dir: Path, tmp_path: Path, unused_tcp_port: int
) -> None:
    proxy = await NetworkProxy.start([parse_host_rule(f"127.0.0.1:{unused_tcp_port}")], short_dir)
    probe = (
        f"{shlex.quote(sys.executable)} -I -c 'import socket\n"
        'c = socket.create_connection(("127.0.0.1", {port}), timeout=10)\n'
        'try: print("read", c.recv(100))\n'
        "except OSError as e: print(type(e).__name__)'"
    ).replace("{port}", str(unused_tcp_port))
    try:
        out = await _sandboxed(proxy, tmp_path, probe, forward=True)
    finally:
        await proxy.close()
    # The bridge took the connection inside; the host's side refused it: the client is told
    # by a reset, as a server that went away midway tells it, never by bytes it would parse.
    assert out == "ConnectionResetError\n"
