"""The socket server over a real Unix socket: framing at EOF, per-client byte bounds, peer uid."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from orchestrator.adapters.providers.scripted import ScriptedProvider, ScriptedReply
from orchestrator.config.model import PodConfig
from orchestrator.core.history import SystemMessage
from orchestrator.serving.client import PodClient
from orchestrator.serving.pod import build_pod
from orchestrator.serving.server import PodServer, ServerError, socket_is_live
from tests.e2e.harness import collect_until, running_pod


async def _read_to_eof(reader: asyncio.StreamReader, timeout: float = 10.0) -> list[Any]:
    data = await asyncio.wait_for(reader.read(), timeout)
    return [json.loads(line) for line in data.splitlines()]


# -- a last line without a newline ---------------------------------------------------------------


@pytest.mark.parametrize(
    "tail,expected",
    [
        (b'{"method": "get_status", "id": "last"}', ("status", "last")),
        (b'{"method": "get_status", "id": "crlf"}\r', ("status", "crlf")),
        (b'{"method": "explode", "id": "bad"}', ("error", "bad")),
        (b"{not json", ("error", None)),
    ],
)
async def test_a_last_line_without_newline_is_answered_at_eof(
    workspace: Path, short_dir: Path, tail: bytes, expected: tuple[str, object]
) -> None:
    async with running_pod(workspace, short_dir, replies=[]) as pod:
        reader, writer = await asyncio.open_unix_connection(str(pod.socket))
        writer.write(b'{"method": "get_status", "id": "first"}\n' + tail)
        await writer.drain()
        writer.write_eof()  # the client is done sending; it still reads
        lines = await _read_to_eof(reader)
        replies = [(m["event"], m["data"].get("id")) for m in lines if "id" in m["data"]]
        assert replies == [("status", "first"), expected]
        writer.close()


async def test_blank_or_oversized_unterminated_tails_are_not_methods(
    workspace: Path, short_dir: Path
) -> None:
    async with running_pod(workspace, short_dir, replies=[]) as pod:
        reader, writer = await asyncio.open_unix_connection(str(pod.socket))
        writer.write(b'{"method": "get_status", "id": 1}\n  \t ')
        writer.write_eof()
        lines = await _read_to_eof(reader)
        assert [m["event"] for m in lines if "id" in m["data"]] == ["status"]
        writer.close()


# -- a client that never reads -------------------------------------------------------------------


@contextlib.asynccontextmanager
async def _served(
    workspace: Path, sock_dir: Path, replies: list[ScriptedReply], **server: int
) -> AsyncIterator[tuple[PodServer, ScriptedProvider]]:
    """A real pod (controller, session, tools) on a server whose bounds the test chooses."""
    # Big answers: a window that holds them, so the test is about the socket, not compaction.
    provider = ScriptedProvider(replies=replies, window=10_000_000)
    config = PodConfig(
        workspace=workspace, name="t", provider="scripted", context_window=10_000_000
    )
    holder: list[PodServer] = []
    pod = build_pod(config, broadcast=lambda line: holder[0].broadcast(line), provider=provider)
    srv = PodServer(sock_dir / "pod.sock", pod.methods.handle, **server)
    holder.append(srv)
    await srv.start()
    try:
        yield srv, provider
    finally:
        await srv.close()
        pod.controller.transcript.session.close()


async def _peak_until(srv: PodServer, done: Callable[[], bool], tries: int = 500) -> int:
    """The most the server held for its clients, watched until ``done`` (or ``tries`` naps)."""
    peak = srv.queued_bytes
    for _ in range(tries):
        if done():
            break
        await asyncio.sleep(0.01)
        peak = max(peak, srv.queued_bytes)
    return peak


async def _grow_history(client: PodClient) -> int:
    """Four turns of 500 kB answers; the size of the ``history`` reply that then holds them."""
    for n in range(4):
        await client.send("run", {"input": f"grow the history {n}"})
        await collect_until(client, "run_end", timeout=120)
    history = await client.request("get_history", timeout=120)
    size = len(json.dumps({"event": "history", "data": history.data}).encode())
    assert size > 2_000_000
    return size


async def test_a_client_that_never_reads_gets_no_more_work_done_for_it(
    workspace: Path, short_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bound = 8 * 1024 * 1024
    big = ScriptedReply(text="h" * 500_000, chunk_size=500_000)
    replies = [big] * 4 + [ScriptedReply(text="still streaming " * 20, chunk_size=8)]
    async with _served(workspace, short_dir, replies, client_max_queued_bytes=bound) as (
        srv,
        _,
    ):
        streamer = await PodClient.connect(srv.path)
        size = await _grow_history(streamer)  # 150 copies would be 300 MB
        caplog.set_level(logging.WARNING, logger="orchestrator.serving.server")

        # 150 get_history in one write, and never a read: the first reply is built and held;
        # the other requests wait, unread, until the hog takes it (before, each was built and
        # queued, up to the bound, and the hog dropped).
        hog = _hog(srv.path, 150)
        held = await _peak_until(
            srv,
            lambda: srv.queued_bytes >= size // 2 or "disconnected" in caplog.text,
            tries=3000,
        )
        peak = max(held, await _peak_until(srv, lambda: False, tries=100))
        assert "disconnected" not in caplog.text, "replies were built up to the bound"
        assert held >= size // 2, "the first reply was never built"
        assert peak <= size + 1024 * 1024, f"{peak} bytes held for a client that never reads"

        # The other client still streams a whole turn.
        await streamer.send("run", {"input": "and now?"})
        events = await collect_until(streamer, "run_end", timeout=120)
        assert events[-1].data == {"result": "finished"}
        text = "".join(e.data["text"] for e in events if e.event == "text_delta")
        assert text == "still streaming " * 20
        hog.close()
        await _peak_until(srv, lambda: srv.queued_bytes < 1024 * 1024, tries=3000)
        assert srv.queued_bytes < 1024 * 1024
        await streamer.close()


def _replies_in_order(peer: socket.socket, count: int, event: str = "history") -> list[object]:
    """The ids of the first ``count`` replies (``event``) a client that starts reading now
    gets."""
    peer.setblocking(True)
    peer.settimeout(120)
    data, ids = b"", []
    while len(ids) < count:
        chunk = peer.recv(1024 * 1024)
        assert chunk, f"the pod closed the connection after {ids}"
        data += chunk
        *lines, data = data.split(b"\n")
        replies = [json.loads(line) for line in lines if line.strip()]
        ids += [r["data"]["id"] for r in replies if r["event"] == event and "eid" not in r]
    return ids[:count]


@dataclass
class _HeldDisk:
    """A pod served over its socket whose session writes wait while ``disk`` is clear, and
    the methods its server read, in order."""

    srv: PodServer
    transcript: Any
    disk: threading.Event
    gated_write: threading.Event
    asked: list[str]

    async def hold(self) -> None:
        """Clear the disk; something the pod commits (a note) then waits for it."""
        self.disk.clear()
        self.transcript.commit(SystemMessage(text="a note", origin="notify"))
        assert await asyncio.to_thread(self.gated_write.wait, 60), "nothing was written"


@contextlib.asynccontextmanager
async def _held_disk(
    workspace: Path, short_dir: Path, monkeypatch: Any, replies: list[ScriptedReply]
) -> AsyncIterator[_HeldDisk]:
    provider = ScriptedProvider(replies=replies, window=10_000_000)
    config = PodConfig(workspace=workspace, name="t", provider="scripted", context_window=10**7)
    holder: list[PodServer] = []
    pod = build_pod(config, broadcast=lambda line: holder[0].broadcast(line), provider=provider)
    transcript = pod.controller.transcript
    disk, gated_write = threading.Event(), threading.Event()
    disk.set()
    write_lines = transcript.session.write_lines

    def slow_disk(lines: list[bytes]) -> None:
        if not disk.is_set():
            gated_write.set()
        disk.wait(timeout=120)  # a disk that takes its time while ``disk`` is clear
        write_lines(lines)

    monkeypatch.setattr(transcript.session, "write_lines", slow_disk)
    asked: list[str] = []

    def handle(method: str, params: object, request_id: object, reply: Any) -> None:
        asked.append(method)
        pod.methods.handle(method, params, request_id, reply)

    srv = PodServer(short_dir / "pod.sock", handle, client_max_queued_bytes=8 * 1024 * 1024)
    holder.append(srv)
    await srv.start()
    pool = ThreadPoolExecutor(1)
    transcript.write_in_background(pool)
    try:
        yield _HeldDisk(srv, transcript, disk, gated_write, asked)
    finally:
        disk.set()
        await srv.close()
        transcript.close()
        pool.shutdown()


async def test_a_reply_held_for_the_disk_pauses_its_clients_reading(
    workspace: Path, short_dir: Path, caplog: pytest.LogCaptureFixture, monkeypatch: Any
) -> None:
    """A ``get_history`` held behind a session write counts for its client as a queued one
    does: none of its further requests is read until it is sent (they were: 150 replies,
    each held uncounted, then built at once when the disk caught up, and the client
    dropped), and then the byte bound holds."""
    big = ScriptedReply(text="h" * 500_000, chunk_size=500_000)
    async with _held_disk(workspace, short_dir, monkeypatch, [big] * 4) as held:
        srv, asked = held.srv, held.asked
        streamer = await PodClient.connect(srv.path)
        size = await _grow_history(streamer)
        caplog.set_level(logging.WARNING, logger="orchestrator.serving.server")
        await held.hold()

        before = len(asked)
        hog = _hog(srv.path, 150)
        await _peak_until(srv, lambda: len(asked) > before, tries=6000)
        # Loop turns enough for the server to read the other 149 requests, if it would.
        await _peak_until(srv, lambda: len(asked) > before + 1, tries=100)
        assert asked[before:] == ["get_history"], "requests were read behind a held reply"

        held.disk.set()
        peak = await _peak_until(srv, lambda: held.transcript.durable, tries=12000)
        peak = max(peak, await _peak_until(srv, lambda: False, tries=100))
        assert held.transcript.durable
        assert "disconnected" not in caplog.text
        assert peak <= size + 1024 * 1024, f"{peak} bytes held for a client that never reads"
        assert await asyncio.to_thread(_replies_in_order, hog, 3) == [0, 1, 2]
        hog.close()
        await streamer.close()


async def test_a_status_held_for_the_disk_lets_the_next_request_be_read(
    workspace: Path, short_dir: Path, monkeypatch: Any
) -> None:
    """A reply built already (a ``status``) is counted by its bytes, not as a pause: the
    requests a client pipelined behind it are read at once, as the conformance kit's rows
    need (``pause``, ``set_budget``, ``get_status`` in one write see ``pausing``)."""
    async with _held_disk(workspace, short_dir, monkeypatch, [ScriptedReply(text="hi")]) as held:
        await held.hold()
        before = len(held.asked)
        peer = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        peer.connect(str(held.srv.path))
        peer.sendall(
            b"".join(
                json.dumps({"method": "get_status", "id": n}).encode() + b"\n" for n in range(5)
            )
        )
        await _peak_until(held.srv, lambda: len(held.asked) >= before + 5, tries=6000)
        assert held.asked[before:] == ["get_status"] * 5  # all read while the disk waits
        assert not held.transcript.durable
        held.disk.set()
        assert await asyncio.to_thread(_replies_in_order, peer, 5, "status") == [0, 1, 2, 3, 4]
        peer.close()


def _silent(path: Path) -> socket.socket:
    """A client that connects and never reads (nor asks anything)."""
    peer = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    peer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # keep what the kernel holds small
    peer.connect(str(path))
    return peer


def _hog(path: Path, requests: int) -> socket.socket:
    """A client that asks for the history ``requests`` times in one write and never reads."""
    hog = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    hog.connect(str(path))
    hog.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # keep what the kernel holds small
    hog.sendall(
        b"".join(
            json.dumps({"method": "get_history", "id": n}).encode() + b"\n" for n in range(requests)
        )
    )
    return hog


def _lines_to_eof(peer: socket.socket) -> list[dict[str, Any]]:
    peer.setblocking(True)
    peer.settimeout(10)
    data = b""
    with contextlib.suppress(ConnectionResetError):
        while chunk := peer.recv(1024 * 1024):
            data += chunk
    peer.close()
    return [json.loads(line) for line in data.splitlines() if line.strip()]


async def test_clients_that_never_read_are_bounded_together_slowest_first(
    workspace: Path, short_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    per_client, together = 64 * 1024 * 1024, 10 * 1024 * 1024
    big = ScriptedReply(text="h" * 500_000, chunk_size=500_000)
    async with _served(
        workspace,
        short_dir,
        [big] * 6 + [ScriptedReply(text="still here")],
        client_max_queued_bytes=per_client,
        clients_max_queued_bytes=together,
    ) as (srv, _):
        streamer = await PodClient.connect(srv.path)
        caplog.set_level(logging.WARNING, logger="orchestrator.serving.server")

        # Each silent client is sent the events of every turn (some 1 MB a turn) and reads
        # none: each holds less than the per-client bound, together far more than the bound
        # of all clients. The one that holds most (it came first) is dropped first.
        greedy = _silent(srv.path)
        for n in range(4):
            await streamer.send("run", {"input": f"grow {n}"})
            await collect_until(streamer, "run_end", timeout=120)
        modest = [_silent(srv.path) for _ in range(6)]
        peak = 0
        for n in range(2):
            await streamer.send("run", {"input": f"more {n}"})
            await collect_until(streamer, "run_end", timeout=120)
            peak = max(peak, await _peak_until(srv, lambda: False, tries=10))
        peak = max(peak, await _peak_until(srv, lambda: "all clients" in caplog.text))
        # The greedy client was dropped, with an error event as its last line (delivered to a
        # client that reads within the grace period).
        lines = await asyncio.to_thread(_lines_to_eof, greedy)
        assert peak <= together + 2 * 1024 * 1024, f"{peak} bytes held for all clients"
        assert "all clients" in caplog.text
        assert lines[-1]["event"] == "error", [line["event"] for line in lines][-3:]
        assert lines[-1]["data"]["code"] == "queue_full"
        assert "all clients" in lines[-1]["data"]["message"]
        for peer in modest:
            peer.close()

        # The client that reads is unaffected.
        await streamer.send("run", {"input": "and now?"})
        events = await collect_until(streamer, "run_end", timeout=120)
        assert events[-1].data == {"result": "finished"}
        await streamer.close()


async def test_a_reading_client_gets_a_reply_larger_than_the_bound(
    workspace: Path, short_dir: Path
) -> None:
    bound = 512 * 1024
    # Each turn's burst of events fits in the bound; the history of all four does not.
    replies = [ScriptedReply(text="x" * 200_000, chunk_size=200_000)] * 4
    async with _served(workspace, short_dir, replies, client_max_queued_bytes=bound) as (srv, _):
        client = await PodClient.connect(srv.path)
        for n in range(4):
            await client.send("run", {"input": f"a big answer {n}"})
            await collect_until(client, "run_end", timeout=120)
        # One reply bigger than the bound is delivered to a client that reads, and what
        # follows it right away is queued behind it.
        await client.send_raw(
            b'{"method": "get_history", "id": "h"}\n{"method": "get_status", "id": "s"}\n'
        )
        history = await client.wait_for("history", id="h", timeout=120)
        assert len(json.dumps(history.data)) > bound
        assert len(history.data["items"]) == 8
        status = await client.wait_for("status", id="s", timeout=120)
        assert status.data["status"] == "idle"
        await client.close()


# -- peers running as another user ---------------------------------------------------------------


def _connect_as(uid: int, path: Path) -> tuple[int, bytes]:
    """Fork a child that becomes ``uid``, sends get_status and reads to EOF; (status, bytes)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no asyncio, no logging, only the socket and the pipe
        code = 0
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            peer = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            peer.settimeout(5)
            peer.connect(str(path))
            with contextlib.suppress(OSError):
                peer.sendall(b'{"method": "get_status", "id": "intruder"}\n')
            received = b""
            # A timeout means the pod kept the connection open: report what was served.
            with contextlib.suppress(ConnectionResetError, TimeoutError):
                while chunk := peer.recv(65536):
                    received += chunk
            os.write(write_end, received)
        except BaseException as exc:  # report it to the parent, which fails the test
            os.write(write_end, f"child failed: {exc!r}".encode())
            code = 3
        finally:
            os._exit(code)
    os.close(write_end)
    data = b""
    while chunk := os.read(read_end, 65536):
        data += chunk
    os.close(read_end)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), data


@pytest.mark.skipif(os.geteuid() != 0, reason="becoming another user needs root")
async def test_a_peer_running_as_another_user_is_refused(
    workspace: Path, short_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A directory and socket anyone can reach: the file modes no longer protect the pod, so the
    # peer check is what stands between another user and the conversation.
    open_dir = short_dir / "open"
    open_dir.mkdir()
    os.chmod(open_dir, 0o777)
    os.chmod(short_dir, 0o755)
    async with running_pod(workspace, open_dir, replies=[ScriptedReply(text="hi")]) as pod:
        os.chmod(pod.socket, 0o666)
        assert stat.S_IMODE(pod.socket.stat().st_mode) == 0o666
        caplog.set_level(logging.WARNING, logger="orchestrator.serving.server")
        code, data = await asyncio.to_thread(_connect_as, 65534, pod.socket)
        assert code == 0, data
        lines = [json.loads(line) for line in data.splitlines()]
        assert len(lines) == 1, lines
        assert lines[0]["event"] == "error"
        assert lines[0]["data"]["code"] == "forbidden"
        assert "uid 65534" in lines[0]["data"]["message"]
        assert "uid 65534" in caplog.text and "refused" in caplog.text
        # Our own user is served as before.
        c = await pod.client()
        await c.send("run", {"input": "hello"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        assert (await c.request("get_status")).data["status"] == "idle"
        await c.close()


# -- the socket path names only our own files ----------------------------------------------------


def _handler(method: str, params: object, request_id: object, send: Any) -> None:
    return None


@pytest.mark.parametrize("kind", ["file", "symlink", "directory"])
async def test_a_file_that_is_not_a_stale_socket_of_ours_is_never_replaced(
    short_dir: Path, kind: str
) -> None:
    path = short_dir / "package.sock"
    target = short_dir / "target"
    target.write_text("keep me")
    if kind == "file":
        path.write_text('{"name": "the-project"}')
    elif kind == "symlink":
        path.symlink_to(target)
    else:
        path.mkdir()
    before = os.lstat(path)
    with pytest.raises(ServerError, match="refusing to listen on"):
        await PodServer(path, _handler).start()
    after = os.lstat(path)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    assert target.read_text() == "keep me"


async def test_a_stale_socket_is_replaced_and_only_our_socket_is_removed(short_dir: Path) -> None:
    path = short_dir / "p.sock"
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(path))
    stale.close()  # bound, never listening: stale
    server = PodServer(path, _handler)
    await server.start()
    assert stat.S_ISSOCK(os.lstat(path).st_mode)
    # Someone puts a file where the socket was while the pod runs: it is not ours to delete.
    path.unlink()
    path.write_text("not ours")
    await server.close()
    assert path.read_text() == "not ours"


_DIES_FORKING = """
import os, socket, sys, time
listener = socket.socket(socket.AF_UNIX)
listener.bind(sys.argv[1])
listener.listen(8)
child = os.fork()
if child == 0:  # a command being started: it holds the listener until it execs
    os.close(1)
    os.close(2)
    time.sleep(60)
    os._exit(0)
print(child, flush=True)
os._exit(0)  # the pod, killed
"""


async def test_a_socket_held_only_by_a_dead_pods_half_forked_child_is_stale(
    short_dir: Path,
) -> None:
    # What a pod killed while it forked a command leaves: its listening socket, held by the
    # child for a moment. It accepts connections nobody will ever answer.
    path = short_dir / "p.sock"
    said = subprocess.run(
        [sys.executable, "-c", _DIES_FORKING, str(path)], capture_output=True, timeout=30
    )
    child = int(said.stdout)
    try:
        raw = socket.socket(socket.AF_UNIX)
        raw.connect(str(path))  # the hazard: something is there
        raw.close()
        assert not socket_is_live(path)
        server = PodServer(path, _handler)
        await server.start()  # a restarted pod replaces it, instead of refusing to start
        assert socket_is_live(path)
        await server.close()
    finally:
        os.kill(child, signal.SIGKILL)
