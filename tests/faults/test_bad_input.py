"""A bad-input corpus over the real socket.

Every case gets a clear ``invalid_request`` error (or an ``alert``), the pod stays up, another
client streaming a slow reply at the same time is unaffected (its events match a control run),
and nothing committed is lost. Paths that must never be read (traversal, absolute paths out of
scope, symlink escapes, FIFOs, sockets, ``/dev/zero``, binary and huge files) are tried both as
``@`` refs and as tool arguments; each tool call ends, bounded by a timeout, with a clear
result.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import stat
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from orchestrator.adapters.providers.base import ProviderRequest
from orchestrator.serving.client import PodClient, PodEvent
from tests.e2e.harness import (
    RunningPod,
    ScriptedReply,
    ScriptedToolCall,
    collect_until,
    names,
    running_pod,
)

SLOW = ScriptedReply(text="s" * 240, chunk_size=4, chunk_delay_s=0.01)


def _slow(_: ProviderRequest) -> ScriptedReply:
    return SLOW


@contextlib.asynccontextmanager
async def streaming_pod(
    workspace: Path, sock_dir: Path, **config: Any
) -> AsyncIterator[RunningPod]:
    """A pod whose every reply is the same slow stream."""
    async with running_pod(workspace, sock_dir, **config) as pod:
        pod.provider.responder = _slow
        yield pod


async def _history(client: PodClient) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = (await client.request("get_history", timeout=30)).data["items"]
    return items


async def _control(pod: RunningPod) -> list[str]:
    """Event names of one undisturbed slow run."""
    c = await pod.client()
    await c.send("run", {"input": "control"})
    events = await collect_until(c, "run_end", timeout=30)
    await c.close()
    assert events[-1].data == {"result": "finished"}
    return names(events)


async def _alongside(pod: RunningPod, action: Callable[[], Awaitable[None]]) -> list[str]:
    """Run ``action`` while another client streams a slow reply; that client's event names."""
    streamer = await pod.client()
    before = await _history(streamer)
    collecting = asyncio.create_task(collect_until(streamer, "run_end", timeout=120))
    await streamer.send("run", {"input": "stream while someone misbehaves"})
    await asyncio.sleep(0.05)
    await action()
    events = await collecting
    after = await _history(streamer)
    # Nothing committed is lost: the history grew by exactly the streamed turn.
    assert after[: len(before)] == before
    assert [i["kind"] for i in after[len(before) :]] == ["user_message", "assistant"]
    await streamer.close()
    return names(events)


class RawClient:
    """Bytes in, lines out, in order (no background reader)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def connect(cls, path: Path) -> RawClient:
        reader, writer = await asyncio.open_unix_connection(str(path), limit=64 * 1024 * 1024)
        return cls(reader, writer)

    async def write(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def event(self, timeout: float = 10.0) -> PodEvent:
        line = await asyncio.wait_for(self.reader.readline(), timeout)
        assert line, "the pod closed the connection"
        raw = json.loads(line)
        return PodEvent(raw["event"], raw.get("data") or {})

    async def reply(self, timeout: float = 10.0) -> PodEvent:
        """The next direct reply (status/history/completions/error), skipping broadcasts."""
        while True:
            got = await self.event(timeout)
            if "id" in got.data:
                return got

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(Exception):
            await self.writer.wait_closed()


# -- malformed lines ---------------------------------------------------------------------------

_WRONG_TYPES: list[tuple[str, dict[str, Any]]] = [
    ("run", {"segments": "nope"}),
    ("run", {"segments": [5]}),
    ("run", {"segments": [{"kind": "text", "text": 5}]}),
    ("run", {"segments": [{"kind": "text"}]}),
    ("run", {"segments": [{"kind": "file_ref", "path": ["a"]}]}),
    ("run", {"segments": [{"kind": "paste", "id": 1.5, "text": "x"}]}),
    ("run", {"input": 5}),
    ("run", {"input": None, "segments": None}),
    ("run", {"input": "x", "segments": [{"kind": "text", "text": "y"}]}),
    ("run", {"input": "x", "segments": []}),
    ("run", {"input": None, "segments": [{"kind": "text", "text": "y"}]}),
    ("run", {"input": "   \n\t"}),
    ("run", {}),
    ("notify", {"message": 5}),
    ("notify", {"message": ""}),
    ("notify", {"message": "   "}),
    ("notify", {}),
    ("pod_event", {"kind": "exploded"}),
    ("pod_event", {"kind": "errored", "pod": 5}),
    ("pod_event", {"kind": "errored", "message": ["x"]}),
    ("pod_event", {}),
    ("complete_files", {"prefix": 5}),
    ("complete_files", {"limit": 0}),
    ("complete_files", {"limit": 100_000}),
    ("complete_files", {"limit": "ten"}),
    ("get_status", {"verbose": True}),
    ("get_history", {"since": 3}),
    ("pause", {"now": True}),
    ("resume", {"x": 1}),
    ("cancel", {"x": 1}),
    ("shutdown", {"force": True}),
]

_BAD_LINES: list[tuple[str, bytes, bool]] = [
    # (label, line, id is echoed)
    ("not json", b"{not json", False),
    ("truncated json", b'{"method": "get_status", "id": 1', False),
    ("invalid utf-8", b'{"method": "get_status", "id": "\xff\xfe"}', False),
    ("lone continuation byte", b"\x80", False),
    ("array", b"[1, 2, 3]", False),
    ("string", b'"get_status"', False),
    ("number", b"42", False),
    ("null", b"null", False),
    ("true", b"true", False),
    ("unknown method", b'{"method": "explode", "id": "u1"}', True),
    ("method not a string", b'{"method": 5, "id": "u2"}', True),
    ("no method", b'{"id": "u3"}', True),
    ("extra top-level field", b'{"method": "get_status", "id": "x1", "extra": 1}', True),
    ("params not an object", b'{"method": "get_status", "id": "x2", "params": [1]}', True),
    ("id an object", b'{"method": "get_status", "id": {"a": 1}}', False),
    ("nul byte", b'{"method": "get_status\\u0000", "id": "x4"}', True),
    ("nesting within the recursion limit", b"[" * 500 + b"]" * 500, False),
]


async def test_malformed_lines_get_invalid_request_while_another_client_streams(
    workspace: Path, short_dir: Path
) -> None:
    async with streaming_pod(workspace, short_dir) as pod:
        control = await _control(pod)
        bad = await RawClient.connect(pod.socket)
        seen: list[str] = []

        async def misbehave() -> None:
            for label, line, echoed in _BAD_LINES:
                await bad.write(line + b"\n")
                err = await bad.reply()
                assert err.event == "error", (label, err)
                assert err.data["code"] == "invalid_request", (label, err.data)
                assert err.data["message"], label
                if echoed:
                    assert err.data["id"] is not None, (label, err.data)
                seen.append(label)
            for n, (method, params) in enumerate(_WRONG_TYPES):
                wrong = json.dumps({"method": method, "params": params, "id": f"w{n}"})
                await bad.write(wrong.encode() + b"\n")
                err = await bad.reply()
                assert err.event == "error" and err.data["id"] == f"w{n}", (method, params, err)
                assert err.data["code"] == "invalid_request", (method, params, err.data)
                assert method in err.data["message"], err.data["message"]
                seen.append(f"{method} {params}")
            # Empty and blank lines are ignored: the next reply is the status, not an error.
            await bad.write(b"\n\n   \n\t\r\n" + b'{"method": "get_status", "id": "after"}\n')
            status = await bad.reply()
            assert status.event == "status" and status.data["id"] == "after", status

        streamed = await _alongside(pod, misbehave)
        assert streamed == control
        assert len(seen) == len(_BAD_LINES) + len(_WRONG_TYPES)
        await bad.write(b'{"method": "get_status", "id": "end"}\n')
        assert (await bad.reply()).data["status"] == "idle"
        pod.assert_all_requests_valid()
        await bad.close()


@pytest.mark.parametrize("opener,closer", [(b"[", b"]"), (b'{"a":', b"}")])
async def test_deeply_nested_json_gets_invalid_request(
    workspace: Path, short_dir: Path, opener: bytes, closer: bytes
) -> None:
    async with running_pod(workspace, short_dir, replies=[ScriptedReply(text="ok")]) as pod:
        bad = await RawClient.connect(pod.socket)
        depth = 100_000
        await bad.write(opener * depth + b"1" * (opener == b'{"a":') + closer * depth + b"\n")
        err = await bad.reply()
        assert err.event == "error" and err.data["code"] == "invalid_request", err
        await bad.write(b'{"method": "get_status", "id": "next"}\n')
        assert (await bad.reply()).data["id"] == "next"
        await bad.close()


async def test_unknown_segment_kind_is_an_alert_and_a_placeholder(
    workspace: Path, short_dir: Path
) -> None:
    async with running_pod(workspace, short_dir, replies=[ScriptedReply(text="ok")] * 2) as pod:
        c = await pod.client()
        await c.send(
            "run",
            {
                "segments": [
                    {"kind": "text", "text": "look: "},
                    {"kind": "hologram", "payload": {"deep": [1, 2]}, "text": 5},
                ]
            },
        )
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        alerts = [e.data for e in events if e.event == "alert"]
        assert alerts and alerts[0]["level"] == "warn" and "'hologram'" in alerts[0]["message"]
        history = await _history(c)
        # The segment is kept whole in history (newer clients keep working).
        assert history[0]["segments"][1]["payload"] == {"deep": [1, 2]}
        assert pod.provider.requests[0].messages[0]["content"][0]["text"] == (
            "look: [unsupported segment: hologram]"
        )
        # A segment that is only unknown (no text at all) is still a valid message.
        await c.send("run", {"segments": [{"kind": "hologram"}]})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        pod.assert_all_requests_valid()
        await c.close()


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def test_a_100_mb_line_is_discarded_with_bounded_memory(
    workspace: Path, short_dir: Path
) -> None:
    async with streaming_pod(workspace, short_dir) as pod:
        control = await _control(pod)
        bad = await RawClient.connect(pod.socket)
        prober = await pod.client()
        chunk = b"a" * (1024 * 1024)
        peak_growth = 0
        worst_rtt = 0.0

        async def probe() -> None:
            nonlocal worst_rtt
            while True:
                started = time.monotonic()
                await prober.request("get_status", timeout=10)
                worst_rtt = max(worst_rtt, time.monotonic() - started)
                await asyncio.sleep(0.02)

        async def misbehave() -> None:
            nonlocal peak_growth
            baseline = _rss_kib()
            prober_task = asyncio.create_task(probe())
            try:
                await bad.write(b'{"method": "run", "params": {"input": "')
                for _ in range(100):
                    await bad.write(chunk)
                    peak_growth = max(peak_growth, _rss_kib() - baseline)
                await bad.write(b'"}, "id": "huge"}\n')
                err = await bad.reply(timeout=60)
            finally:
                prober_task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await prober_task
            assert err.event == "error" and err.data["code"] == "invalid_request"
            assert "longer than" in err.data["message"]
            # The next line on the same connection is read normally.
            await bad.write(b'{"method": "get_status", "id": "next"}\n')
            status = await bad.reply()
            assert status.event == "status" and status.data["id"] == "next"

        streamed = await _alongside(pod, misbehave)
        assert streamed == control
        # The pod keeps at most one 8 MiB line (plus a read chunk) of it.
        assert peak_growth < 64 * 1024, f"RSS grew by {peak_growth} KiB"
        assert worst_rtt < 2.0, f"get_status took {worst_rtt:.2f} s during the flood"
        assert len(pod.provider.requests) == 2  # the huge run never reached the model
        await bad.close()
        await prober.close()


async def test_a_flood_of_10000_methods_is_answered_in_order(
    workspace: Path, short_dir: Path
) -> None:
    async with streaming_pod(workspace, short_dir) as pod:
        control = await _control(pod)
        flooder = await RawClient.connect(pod.socket)
        kinds: list[tuple[dict[str, Any], str]] = [
            ({"method": "get_status"}, "status"),
            ({"method": "bogus"}, "error"),
            ({"method": "resume"}, "error"),
            ({"method": "complete_files", "params": {"prefix": "R"}}, "file_completions"),
            ({"method": "run", "params": {"input": "  "}}, "error"),
            ({"method": "run", "params": {"input": "a", "segments": []}}, "error"),
        ]
        total = 10_000

        async def misbehave() -> None:
            lines = []
            for n in range(total):
                message, _ = kinds[n % len(kinds)]
                lines.append(json.dumps({**message, "id": n}).encode())
            await flooder.write(b"\n".join(lines) + b"\n")
            for n in range(total):
                got = await flooder.reply(timeout=30)
                assert got.data["id"] == n, (n, got)
                assert got.event == kinds[n % len(kinds)][1], (n, got)

        streamed = await _alongside(pod, misbehave)
        assert streamed == control
        await flooder.write(b'{"method": "get_status", "id": "last"}\n')
        assert (await flooder.reply()).data["status"] == "idle"
        await flooder.close()


async def test_an_unterminated_last_line_is_not_dropped(workspace: Path, short_dir: Path) -> None:
    replies = [ScriptedReply(text="noted")]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        watcher = await pod.client()
        # A script that writes one line without "\n" and hangs up (printf ... | socat).
        _, writer = await asyncio.open_unix_connection(str(pod.socket))
        writer.write(b'{"method": "notify", "params": {"message": "build finished"}}')
        await writer.drain()
        writer.close()
        events = await collect_until(watcher, "run_end", timeout=10)
        assert events[-1].data == {"result": "finished"}
        history = await _history(watcher)
        assert history[0]["kind"] == "system_message" and "build finished" in history[0]["text"]
        # A client that half-closes still gets the reply to its unterminated last line.
        half = await RawClient.connect(pod.socket)
        await half.write(b'{"method": "get_status", "id": "tail"}')
        half.writer.write_eof()
        status = await half.reply()
        assert status.event == "status" and status.data["id"] == "tail"
        await half.close()
        await watcher.close()


async def test_a_client_that_never_reads_holds_up_nobody_while_another_streams(
    workspace: Path, short_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    big = ScriptedReply(text="h" * 500_000, chunk_size=500_000)
    async with running_pod(
        workspace, short_dir, replies=[big] * 4, context_window=10_000_000
    ) as pod:
        grower = await pod.client()
        for n in range(4):
            await grower.send("run", {"input": f"grow {n}"})
            await collect_until(grower, "run_end", timeout=30)
        await grower.close()
        pod.provider.responder = _slow
        control = await _control(pod)
        hog = await RawClient.connect(pod.socket)
        caplog.set_level(logging.WARNING, logger="orchestrator.serving.server")

        async def misbehave() -> None:
            # 150 copies of a 2 MB history would be 300 MB built for a client that never
            # reads: the pod builds the first reply and reads no further request of the hog's
            # until it takes that one (tests/orchestrator/serving/test_server.py measures the bound).
            lines = [json.dumps({"method": "get_history", "id": n}).encode() for n in range(150)]
            await hog.write(b"\n".join(lines) + b"\n")

        streamed = await _alongside(pod, misbehave)
        assert streamed == control
        assert "disconnected" not in caplog.text
        # The hog was held back, not dropped: once it reads, its requests are answered in
        # the order it sent them.
        for n in range(3):
            reply = await hog.reply(timeout=120)
            assert reply.event == "history" and reply.data["id"] == n
        await hog.close()
        pod.assert_all_requests_valid()


# -- paths that must never be read --------------------------------------------------------------


@pytest.fixture
def hostile_workspace(workspace: Path) -> Path:
    """A workspace full of traps: escapes, special files, binary and huge files."""
    os.symlink("/etc", workspace / "link_etc")
    os.symlink("/etc/passwd", workspace / "link_passwd")
    os.symlink("/dev/zero", workspace / "zero")
    os.symlink("missing-target", workspace / "dangling")
    os.symlink("loop_b", workspace / "loop_a")
    os.symlink("loop_a", workspace / "loop_b")
    os.mkfifo(workspace / "fifo")
    (workspace / "bin.dat").write_bytes(b"\x00\x01\x02abc" * 100)
    (workspace / "latin1.txt").write_bytes(b"caf\xe9 au lait\n")
    os.symlink("/nonexistent-pod-test/newfile", workspace / "dangling_out")
    return workspace


_NEVER_READ = [
    "../../etc/passwd",
    "src/../../../etc/passwd",
    "/etc/hostname",
    "/etc/passwd",
    "link_etc/passwd",
    "link_passwd",
    "link_etc",
    "fifo",
    "/dev/zero",
    "zero",
    "bin.dat",
    "latin1.txt",
    "dangling_out",
    "loop_a",
    "sock",
    "/proc/self/environ",
]


def _tool_calls(path: str, *, write: bool) -> list[ScriptedToolCall]:
    calls = [
        ("read_file", {"path": path}),
        ("edit_file", {"path": path, "old_string": "a", "new_string": "b"}),
        ("grep", {"pattern": "a", "path": path}),
        ("glob", {"pattern": "*", "path": path}),
    ]
    if write:
        calls.append(("write_file", {"path": path, "content": "pwned"}))
    return [
        ScriptedToolCall(name=name, input=args, id=f"toolu_{n}_{name}")
        for n, (name, args) in enumerate(calls)
    ]


@pytest.mark.parametrize("path", _NEVER_READ)
async def test_paths_out_of_reach_as_refs_and_tool_arguments(
    hostile_workspace: Path, short_dir: Path, path: str
) -> None:
    ws = hostile_workspace
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(ws / "sock"))
    existing = {"bin.dat", "latin1.txt"}
    calls = _tool_calls(path, write=path not in existing)
    try:
        replies = [ScriptedReply(text="checking", tool_calls=calls), ScriptedReply(text="ok")]
        async with running_pod(ws, short_dir, replies=replies) as pod:
            c = await pod.client()
            await c.send(
                "run",
                {
                    "segments": [
                        {"kind": "text", "text": "look "},
                        {"kind": "file_ref", "path": path},
                    ]
                },
            )
            events = await collect_until(c, "run_end", timeout=30)
            assert events[-1].data == {"result": "finished"}
            # As a ref: a warning, and the model reads a placeholder, never the content.
            alerts = [e.data for e in events if e.event == "alert"]
            assert any(a["level"] == "warn" and path in a["message"] for a in alerts), alerts
            first = pod.provider.requests[0].messages[0]["content"]
            assert first == [{"type": "text", "text": f"look [unresolved file ref: {path}]"}]
            # As tool arguments: every call ends with a clear result.
            results = {e.data["id"]: e.data for e in events if e.event == "tool_result"}
            assert set(results) == {call.id for call in calls}
            for call in calls:
                result = results[call.id]
                text = result["summary"] + (result["content"] or "")
                assert "root:" not in text and "pwned" not in text
                # Every tool, grep included, reports a path it cannot use as an error saying why.
                assert result["is_error"], (call.name, result)
                assert result["summary"].startswith(f"{call.name}"), result
                assert len(result["summary"]) > len(call.name) + 5, result
            assert not (Path("/etc") / "pwned").exists()
            pod.assert_all_requests_valid()
            await c.close()
    finally:
        unix.close()
    # Nothing outside was touched, and the files inside kept their content.
    assert (ws / "bin.dat").read_bytes().startswith(b"\x00\x01\x02")
    assert stat.S_ISFIFO(os.lstat(ws / "fifo").st_mode)


async def test_huge_file_as_ref_and_tool_argument_is_bounded(
    hostile_workspace: Path, short_dir: Path
) -> None:
    ws = hostile_workspace
    line = b"0123456789" * 10 + b"\n"
    with (ws / "huge.txt").open("wb") as f:
        f.write(line * (70 * 1024 * 1024 // len(line)))
    calls = _tool_calls("huge.txt", write=False)
    replies = [ScriptedReply(tool_calls=calls), ScriptedReply(text="ok")]
    async with running_pod(ws, short_dir, replies=replies) as pod:
        c = await pod.client()
        prober = await pod.client()
        collecting = asyncio.create_task(collect_until(c, "run_end", timeout=60))
        await c.send(
            "run",
            {
                "segments": [
                    {"kind": "text", "text": "see "},
                    {"kind": "file_ref", "path": "huge.txt"},
                ]
            },
        )
        await prober.wait_for("status", state="executing_tools", timeout=10)
        # The loop stays responsive while tools chew on a 70 MB file.
        worst = 0.0
        while True:
            started = time.monotonic()
            status = await prober.request("get_status", timeout=10)
            worst = max(worst, time.monotonic() - started)
            if status.data["status"] == "idle":
                break
            await asyncio.sleep(0.05)
        events = await collecting
        assert events[-1].data == {"result": "finished"}
        notes = [
            e.data for e in events if e.event == "system_note" and e.data["origin"] == "file_ref"
        ]
        assert len(notes) == 1 and notes[0]["text"].startswith("[File: huge.txt]")
        assert len(notes[0]["text"].encode()) < 17 * 1024
        assert "truncated" in notes[0]["text"]
        results = {e.data["id"]: e.data for e in events if e.event == "tool_result"}
        for result in results.values():
            assert len((result["content"] or "").encode()) <= 17 * 1024, result["summary"]
        assert results["toolu_1_edit_file"]["is_error"]
        assert "too large" in results["toolu_1_edit_file"]["summary"]
        assert not results["toolu_0_read_file"]["is_error"]
        assert worst < 2.0, f"the pod did not answer get_status for {worst:.2f} s"
        pod.assert_all_requests_valid()
        await c.close()
        await prober.close()


# -- permissions ----------------------------------------------------------------------------------


async def test_socket_and_session_are_private(workspace: Path, short_dir: Path) -> None:
    sock_dir = short_dir / "fresh"
    async with running_pod(workspace, sock_dir, replies=[ScriptedReply(text="a")]) as pod:
        assert stat.S_IMODE(pod.socket.stat().st_mode) == 0o600
        assert stat.S_IMODE(sock_dir.stat().st_mode) == 0o700
        c = await pod.client()
        await c.send("run", {"input": "one"})
        await collect_until(c, "run_end")
        await c.send("shutdown")
        await c.close()
        served = await asyncio.wait_for(pod.task, 10)
    assert stat.S_IMODE(served.session_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(served.session_path.parent.stat().st_mode) == 0o700


async def test_socket_in_an_existing_folder_leaves_its_mode_alone(
    workspace: Path, short_dir: Path
) -> None:
    shared = short_dir / "shared"
    shared.mkdir(mode=0o755)
    os.chmod(shared, 0o755)
    async with running_pod(workspace, shared, replies=[]) as pod:
        assert stat.S_IMODE(pod.socket.stat().st_mode) == 0o600
        assert stat.S_IMODE(shared.stat().st_mode) == 0o755


async def test_session_in_an_existing_folder_leaves_its_mode_alone(
    workspace: Path, short_dir: Path
) -> None:
    shared = short_dir / "shared"
    shared.mkdir(mode=0o755)
    os.chmod(shared, 0o755)
    session = shared / "s.jsonl"
    async with running_pod(workspace, short_dir, replies=[], session=session):
        assert stat.S_IMODE(session.stat().st_mode) == 0o600
        assert stat.S_IMODE(shared.stat().st_mode) == 0o755


# -- text the pod cannot encode -------------------------------------------------------------------


async def _not_wedged(pod: RunningPod) -> None:
    """The pod answers, is at rest, and the next run finishes with a valid request."""
    c = await pod.client()
    try:
        status = await c.request("get_status", timeout=3)
        assert status.data["status"] in ("idle", "paused"), status.data
        history = await c.request("get_history", timeout=3)  # must be encodable
        assert history.event == "history", history
        await c.send("run", {"input": "still alive?"})
        events = await collect_until(c, "run_end", timeout=5)
        assert events[-1].data == {"result": "finished"}
        pod.assert_all_requests_valid()
    except BaseException:
        # A wedged pod never stops on its own: do not let the harness wait for it.
        pod.task.cancel()
        raise
    finally:
        await c.close()


_SURROGATE_LINES = {
    "run input": b'{"method": "run", "params": {"input": "hi \\ud800 there"}, "id": "s"}',
    "run paste": b'{"method": "run", "params": {"segments": [{"kind": "paste", "id": 1, '
    b'"text": "\\udfff"}]}, "id": "s"}',
    "pod_event message": b'{"method": "pod_event", "params": {"kind": "errored", '
    b'"message": "\\ud800"}, "id": "s"}',
    "request id": b'{"method": "get_status", "id": "\\ud800"}',
}


@pytest.mark.parametrize("case", sorted(_SURROGATE_LINES))
async def test_lone_surrogate_is_refused_or_survives(
    workspace: Path, short_dir: Path, case: str
) -> None:
    async with running_pod(workspace, short_dir, replies=[ScriptedReply(text="ok")] * 3) as pod:
        c = await RawClient.connect(pod.socket)
        await c.write(_SURROGATE_LINES[case] + b"\n")
        got = await c.event(timeout=3)
        # Either refused at once, or accepted and then a normal turn.
        if got.event == "error":
            assert got.data["code"] == "invalid_request", got.data
        else:
            with contextlib.suppress(TimeoutError):
                while got.event != "run_end":
                    got = await c.event(timeout=2)
        await c.close()
        await _not_wedged(pod)


@pytest.mark.parametrize("how", ["glob", "dir_ref"])
async def test_non_utf8_file_name_in_workspace(workspace: Path, short_dir: Path, how: str) -> None:
    (workspace / "odd").mkdir()
    with open(os.path.join(os.fsencode(workspace / "odd"), b"bad\xffname.txt"), "wb") as f:
        f.write(b"hello\n")
    glob = ScriptedReply(
        tool_calls=[ScriptedToolCall(name="glob", input={"pattern": "**/*"}, id="toolu_g")]
    )
    replies = [glob, ScriptedReply(text="ok")] if how == "glob" else []
    async with running_pod(
        workspace, short_dir, replies=[*replies, *[ScriptedReply(text="ok")] * 3]
    ) as pod:
        c = await pod.client()
        if how == "glob":
            await c.send("run", {"input": "list everything"})
        else:
            await c.send(
                "run",
                {
                    "segments": [
                        {"kind": "text", "text": "see "},
                        {"kind": "file_ref", "path": "odd"},
                    ]
                },
            )
        with contextlib.suppress(TimeoutError):
            events = await collect_until(c, "run_end", timeout=3)
            assert all(e.data.get("code") != "internal" for e in events if e.event == "error")
        await c.close()
        await _not_wedged(pod)


@pytest.mark.parametrize(
    "prefix", ["../", "../../etc/", "/etc/", "/", "link_etc/", "link_etc/pass", "fifo/", "\x00"]
)
async def test_completions_never_leave_the_workspace(
    hostile_workspace: Path, short_dir: Path, prefix: str
) -> None:
    async with running_pod(hostile_workspace, short_dir, replies=[]) as pod:
        c = await pod.client()
        got = await c.request("complete_files", {"prefix": prefix, "limit": 1000})
        assert got.event == "file_completions", got
        assert got.data["candidates"] == [], got.data
        # Out-of-scope links are not offered either.
        top = await c.request("complete_files", {"prefix": "", "limit": 1000})
        offered = set(top.data["candidates"])
        assert not offered & {"link_etc/", "link_passwd", "zero", "dangling_out"}, offered
        await c.close()


async def test_null_params_mean_no_params(workspace: Path, short_dir: Path) -> None:
    async with streaming_pod(workspace, short_dir) as pod:
        bad = await RawClient.connect(pod.socket)
        await bad.write(b'{"method": "get_status", "id": "n1", "params": null}\n')
        reply = await bad.reply()
        assert reply.event == "status" and reply.data["id"] == "n1"
        await bad.close()
