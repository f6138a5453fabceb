"""The peer check every server of the runtime runs at accept, against real processes: one of
this namespace, one in ``bwrap --unshare-pid`` (as a sandboxed command runs), one that
already exited, one of another user."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.serving.peer import Peer, PeerRefused, admit_peer, check_peer, pid_namespace
from tests.orchestrator.sandboxed_peer import (
    ONE_LINE_CLIENT,
    bwrap_pid_ns,
    needs_bwrap,
    sandboxed_line,
)


@pytest.fixture
def listener(short_dir: Path) -> Iterator[tuple[socket.socket, Path]]:
    """A listening Unix socket (its accept waits at most two minutes)."""
    path = short_dir / "s.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.listen(8)
    sock.settimeout(120)
    try:
        yield sock, path
    finally:
        sock.close()


def _client(argv: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _python_client(path: Path) -> list[str]:
    """A client that connects and waits for the server's first line (so it is alive while
    it is checked)."""
    return [sys.executable, "-c", ONE_LINE_CLIENT, str(path)]


def _finish(proc: subprocess.Popen[bytes], conn: socket.socket) -> None:
    conn.close()  # the client reads EOF and exits
    proc.communicate(timeout=120)


def test_a_peer_of_this_namespace_is_admitted(listener: tuple[socket.socket, Path]) -> None:
    server, path = listener
    proc = _client(_python_client(path))
    conn, _ = server.accept()
    try:
        assert check_peer(conn) == Peer(pid=proc.pid, uid=os.getuid())
    finally:
        _finish(proc, conn)


def test_this_process_is_admitted_on_a_socket_pair() -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX)
    with ours, theirs:
        assert check_peer(ours) == Peer(pid=os.getpid(), uid=os.getuid())


def test_a_peer_in_a_pid_namespace_of_its_own_is_refused(
    listener: tuple[socket.socket, Path],
) -> None:
    needs_bwrap()
    server, path = listener
    proc = _client(bwrap_pid_ns(_python_client(path)))
    conn, _ = server.accept()
    try:
        # The peer is alive and of this user: only its namespace tells it apart.
        pid = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
        peer_pid = int.from_bytes(pid[:4], sys.byteorder)
        assert pid_namespace(peer_pid) != pid_namespace("self")
        with pytest.raises(PeerRefused, match="runs in another PID namespace than this server"):
            check_peer(conn)
    finally:
        _finish(proc, conn)


def test_a_peer_that_exited_before_the_check_is_refused(
    listener: tuple[socket.socket, Path],
) -> None:
    server, path = listener
    # Connects and exits at once: its /proc entry is gone when the server looks (a pid
    # given to another process meanwhile must not pass for it).
    code = f"import socket; socket.socket(socket.AF_UNIX).connect({str(path)!r})"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    conn, _ = server.accept()
    with conn, pytest.raises(PeerRefused, match=r"gone|exited before it could be checked"):
        check_peer(conn)


def _fork_as(uid: int, path: Path) -> int:
    """A forked child that becomes ``uid``, connects and waits for EOF (the interpreter's
    files may not be readable by that user, so it is not started anew); its pid."""
    pid = os.fork()
    if pid == 0:  # the child: only the socket, then out
        code = 0
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            peer = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            peer.settimeout(120)
            peer.connect(str(path))
            peer.recv(1)
        except BaseException:
            code = 3
        finally:
            os._exit(code)
    return pid


@pytest.mark.skipif(os.geteuid() != 0, reason="becoming another user needs root")
def test_a_peer_of_another_user_is_refused(listener: tuple[socket.socket, Path]) -> None:
    server, path = listener
    os.chmod(path.parent, 0o755)
    os.chmod(path, 0o666)
    pid = _fork_as(65534, path)
    conn, _ = server.accept()
    try:
        with pytest.raises(PeerRefused, match=r"serves uid 0 only.*from uid 65534"):
            check_peer(conn)
    finally:
        conn.close()
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


async def test_a_refused_peer_gets_one_forbidden_line_and_is_disconnected(
    short_dir: Path,
) -> None:
    needs_bwrap()
    admitted: list[Peer | None] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = await admit_peer(writer, server="this test server")
        admitted.append(peer)
        if peer is not None:
            writer.write(b'{"event": "welcome"}\n')
            await writer.drain()
            writer.close()

    path = short_dir / "a.sock"
    server = await asyncio.start_unix_server(serve, str(path))
    async with server:
        line = json.loads(await sandboxed_line(path))
        assert line["event"] == "error" and line["data"]["code"] == "forbidden"
        message = line["data"]["message"]
        assert message.startswith("this test server refuses this connection: ")
        assert "another PID namespace" in message and "outside the sandbox" in message
        # The same server serves a client of its own namespace.
        reader, writer = await asyncio.open_unix_connection(str(path))
        assert json.loads(await reader.readline()) == {"event": "welcome"}
        writer.close()
    assert admitted[0] is None and admitted[1] is not None


_PR_CAPBSET_DROP = 24
_PR_SET_DUMPABLE = 4

_CHECKING_SERVER = r"""
import ctypes, json, socket, sys
from orchestrator.serving.peer import PeerRefused, check_peer
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.bind(sys.argv[1]); sock.listen(1); sock.settimeout(120)
print("ready", flush=True)
conn, _ = sock.accept()
try:
    peer = check_peer(conn)
    print(json.dumps({"admitted": peer.pid}), flush=True)
except PeerRefused as exc:
    print(json.dumps({"refused": str(exc)}), flush=True)
conn.close()
"""

_NON_DUMPABLE_CLIENT = (
    f"""
import ctypes
ctypes.CDLL(None).prctl({_PR_SET_DUMPABLE}, 0, 0, 0, 0)
"""
    + ONE_LINE_CLIENT
)


def _as_a_user_without_capabilities() -> None:
    """In the server's child before exec: no capability left (as a user's own process has
    none), so a non-dumpable peer's namespace link is closed to it, as it is to the user."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for capability in range(64):
        libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0)


def _checked(short_dir: Path, client: list[str]) -> dict[str, object]:
    """What a server without capabilities decides about ``client`` (the socket's path is
    appended to its command line)."""
    path = short_dir / "c.sock"
    server = subprocess.Popen(
        [sys.executable, "-c", _CHECKING_SERVER, str(path)],
        stdout=subprocess.PIPE,
        preexec_fn=_as_a_user_without_capabilities if os.geteuid() == 0 else None,
    )
    assert server.stdout is not None
    assert server.stdout.readline() == b"ready\n"
    peer = _client([*client, str(path)])
    verdict = json.loads(server.stdout.readline())
    server.communicate(timeout=120)
    peer.communicate(timeout=120)
    assert isinstance(verdict, dict)
    return verdict


def test_a_non_dumpable_peer_of_this_namespace_is_admitted(short_dir: Path) -> None:
    # pod run makes itself non-dumpable (its API key stays out of /proc): its namespace link
    # is then closed to the pod host it starts, which must still serve it.
    verdict = _checked(short_dir, [sys.executable, "-c", _NON_DUMPABLE_CLIENT])
    assert "admitted" in verdict, verdict


def test_a_non_dumpable_peer_in_a_sandbox_is_refused(short_dir: Path) -> None:
    # A sandboxed command that hides its namespace link is told apart by its depth.
    verdict = _checked(short_dir, bwrap_pid_ns([sys.executable, "-c", _NON_DUMPABLE_CLIENT]))
    assert "nested below this server's" in str(verdict.get("refused")), verdict
