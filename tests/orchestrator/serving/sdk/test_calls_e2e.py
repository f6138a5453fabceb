"""The SDK's calls against a real pod on its socket: typed events to the run's end, refusals
as exceptions, what "accepted" rests on, approvals in code, and a run that survives its
connection being cut (each event once)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orchestrator.adapters.providers.scripted import ScriptedReply, ScriptedToolCall
from orchestrator.protocol import (
    EVENT_ID_RE,
    ApprovalRequestData,
    RunEndData,
    StatusData,
    TextData,
    ToolResultData,
    TurnStartData,
    UserMessageData,
)
from orchestrator.serving.client import PodClient
from orchestrator.serving.client_errors import (
    ClientError,
    Duplicate,
    InvalidRequest,
    NotAwaitingApproval,
    NotPaused,
    NotRunning,
    PodRequestError,
)
from tests.e2e.harness import running_pod

LONG = "word " * 200
"""An answer long enough to pause in, or to cut the connection in, while it streams."""


def _slow(text: str = LONG) -> ScriptedReply:
    return ScriptedReply(text=text, chunk_size=5, chunk_delay_s=0.02)


async def test_run_yields_typed_events_through_its_run_end(
    workspace: Path, short_dir: Path
) -> None:
    async with running_pod(
        workspace, short_dir, replies=[ScriptedReply(text="hello there")]
    ) as pod:
        client = await pod.client()
        events = [event async for event in client.run("hi")]
        await client.close()
    names = [event.event for event in events]
    assert names[-1] == "run_end" and names.count("run_end") == 1
    assert isinstance(events[-1].payload, RunEndData) and events[-1].payload.result == "finished"
    by_name = {event.event: event.payload for event in events}
    assert isinstance(by_name["user_message"], UserMessageData)
    assert isinstance(by_name["turn_start"], TurnStartData)
    assert isinstance(by_name["text_done"], TextData) and by_name["text_done"].text == "hello there"
    streamed = "".join(e.payload.text for e in events if e.event == "text_delta")  # type: ignore[union-attr]
    assert streamed == "hello there"


async def test_refusals_are_their_codes_classes(workspace: Path, short_dir: Path) -> None:
    async with running_pod(workspace, short_dir, replies=[_slow()]) as pod:
        client = await pod.client()
        with pytest.raises(NotRunning) as caught:
            await client.pause()
        assert isinstance(caught.value, PodRequestError) and isinstance(caught.value, ClientError)
        with pytest.raises(NotRunning):
            await client.cancel()
        with pytest.raises(NotPaused):
            await client.resume()
        with pytest.raises(NotAwaitingApproval):
            await client.approve("toolu_none")
        with pytest.raises(InvalidRequest, match="mode"):
            await client.set_mode("root")
        with pytest.raises(InvalidRequest):
            [event async for event in client.run("   ")]  # blank input
        assert (await client.status()).status == "idle"  # nothing changed
        assert [e.event async for e in client.run("once", request_id="r1")][-1] == "run_end"
        with pytest.raises(Duplicate):
            [event async for event in client.run("twice", request_id="r1")]
        await client.close()


async def test_accepted_means_no_error_before_the_status_that_follows(
    workspace: Path, short_dir: Path
) -> None:
    """The premise of ``accepted``: a connection's lines are answered in order, so a refusal of
    a method comes before the reply to a ``get_status`` sent after it, and a method taken has
    none."""
    async with running_pod(workspace, short_dir, replies=[_slow()]) as pod:
        reader, writer = await asyncio.open_unix_connection(str(pod.socket), limit=2**26)

        async def replies_to(*lines: dict[str, object]) -> list[tuple[str, object]]:
            writer.write(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
            await writer.drain()
            got: list[tuple[str, object]] = []
            while not got or got[-1][0] != "status" or got[-1][1] != "s":
                line = json.loads(await asyncio.wait_for(reader.readline(), 30))
                if "eid" not in line:  # a reply to this connection alone
                    got.append((line["event"], line["data"].get("id")))
            return got

        # Refused: the error carrying the id comes first.
        assert await replies_to(
            {"method": "pause", "id": "p"}, {"method": "get_status", "id": "s"}
        ) == [("error", "p"), ("status", "s")]
        client = await pod.client()
        run = client.run("go")
        assert (await anext(run)).event  # the run is under way
        # Taken: the status comes with no error before it; the pod is then pausing or paused.
        assert await replies_to(
            {"method": "pause", "id": "p"}, {"method": "get_status", "id": "s"}
        ) == [("status", "s")]
        ends = [event async for event in run if event.event == "run_end"]
        assert isinstance(ends[-1].payload, RunEndData) and ends[-1].payload.result == "paused"
        writer.close()
        await client.close()


async def test_pause_resume_and_follow_to_the_end(workspace: Path, short_dir: Path) -> None:
    async with running_pod(workspace, short_dir, replies=[_slow(), _slow("the rest")]) as pod:
        client = await pod.client()
        results = []
        async for event in client.run("go"):
            if event.event == "text_delta":
                with contextlib.suppress(NotRunning):  # it may have ended meanwhile
                    await client.pause()
            if isinstance(event.payload, RunEndData):
                results.append(event.payload.result)
        assert results == ["paused"]
        assert (await client.status()).status == "paused"
        await client.resume()
        async for event in client.follow():
            if isinstance(event.payload, RunEndData):
                results.append(event.payload.result)
                break
        assert results == ["paused", "finished"]
        await client.close()


async def test_an_approval_handled_in_code(workspace: Path, short_dir: Path) -> None:
    calls = [
        ScriptedToolCall(name="write_file", input={"path": "NOTES.md", "content": "kept\n"}),
        ScriptedToolCall(name="bash", input={"command": "touch ran"}),
    ]
    replies = [ScriptedReply(text="on it", tool_calls=calls), ScriptedReply(text="done")]
    async with running_pod(
        workspace, short_dir, replies=replies, permissions={"mode": "default"}
    ) as pod:
        client = await pod.client()
        results: dict[str, ToolResultData] = {}
        async for event in client.run("write notes, then run something"):
            if isinstance(event.payload, ApprovalRequestData):
                if event.payload.kind == "execute":
                    await client.deny(event.payload.id, "no commands")
                else:
                    await client.approve(event.payload.id)
            if isinstance(event.payload, ToolResultData):
                results[event.payload.id] = event.payload
        await client.close()
    assert (workspace / "NOTES.md").read_text() == "kept\n"
    assert not (workspace / "ran").exists()
    assert sorted(r.summary for r in results.values()) == [
        "denied by user: no commands",
        "write_file: NOTES.md — 5 bytes",
    ]


class CuttingProxy:
    """A Unix socket forwarding each connection to the pod's; :meth:`cut` drops them all."""

    def __init__(self, target: Path) -> None:
        self.target = target
        self.accepted = 0
        self._writers: list[asyncio.StreamWriter] = []

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        pod_reader, pod_writer = await asyncio.open_unix_connection(str(self.target))
        self._writers += [writer, pod_writer]
        await asyncio.gather(self._pipe(reader, pod_writer), self._pipe(pod_reader, writer))

    def cut(self) -> None:
        for writer in self._writers:
            writer.transport.abort()
        self._writers.clear()

    @contextlib.asynccontextmanager
    async def serving(self, path: Path) -> AsyncIterator[Path]:
        server = await asyncio.start_unix_server(self._handle, str(path))
        try:
            yield path
        finally:
            self.cut()
            server.close()
            path.unlink(missing_ok=True)


async def test_a_run_survives_its_connection_cut_and_gets_each_event_once(
    workspace: Path, short_dir: Path
) -> None:
    async with running_pod(workspace, short_dir, replies=[_slow()]) as pod:
        proxy = CuttingProxy(pod.socket)
        async with proxy.serving(short_dir / "proxy.sock") as path:
            client = await PodClient.connect(path)
            events = []
            async for event in client.run("go"):
                events.append(event)
                if sum(e.event == "text_delta" for e in events) in (5, 40):
                    proxy.cut()  # twice, mid-stream
            await client.close()
    assert proxy.accepted == 3
    assert events[-1].event == "run_end"
    numbers = []
    for event in events:
        match = EVENT_ID_RE.fullmatch(event.eid or "")
        assert match is not None, event
        numbers.append(int(match["n"]))
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))  # no gap, no repeat
    streamed = "".join(e.payload.text for e in events if e.event == "text_delta")  # type: ignore[union-attr]
    assert streamed == LONG


async def test_a_run_ended_by_a_shutdown_ends_with_its_run_end(
    workspace: Path, short_dir: Path
) -> None:
    async with running_pod(workspace, short_dir, replies=[_slow()]) as pod:
        client = await pod.client()
        async for event in client.run("go"):
            if event.event == "text_delta" and not pod.task.done():
                await client.shutdown()
        assert isinstance(event.payload, RunEndData) and event.payload.result == "cancelled"
        await client.close()


async def test_a_run_that_cannot_reach_its_pod_again_raises(
    workspace: Path, short_dir: Path
) -> None:
    async with running_pod(workspace, short_dir, replies=[_slow()]) as pod:
        proxy = CuttingProxy(pod.socket)
        async with proxy.serving(short_dir / "proxy.sock") as path:
            client = await PodClient.connect(path)
            await client.status()  # the connection is through
        # The proxy no longer listens: the pod runs on, out of this client's reach.
        with pytest.raises(ClientError, match="no pod is listening"):
            async for _ in client.run("go"):
                pass
        await client.close()


async def test_status_is_typed(workspace: Path, short_dir: Path) -> None:
    async with running_pod(workspace, short_dir) as pod:
        client = await pod.client()
        status = await client.status()
        assert isinstance(status, StatusData) and status.name == "t"
        await client.close()
