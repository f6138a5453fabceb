"""The SDK over the HTTP API: this user's host (in the test's process, on the runtime dir's
control socket, as ``pod host --http`` serves it) with its API on a free loopback port, the
SDK finding both by their usual files. The three examples run through it, and the SDK's own
guarantees hold over SSE: typed events, refusals as classes, a cut stream caught up from
``Last-Event-ID`` with each event once."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from orchestrator.protocol import EVENT_ID_RE, RunEndData, StatusData, TextData
from orchestrator.serving.client_errors import (
    ClientError,
    InvalidRequest,
    NotFound,
    NotPaused,
    NotRunning,
    PodRequestError,
    Unauthorized,
)
from orchestrator.serving.host import Host
from orchestrator.serving.host.address import control_socket
from orchestrator.serving.sdk import HttpPodClient, SyncPod, connect_http, start_pod
from tests.e2e.test_sdk_examples_e2e import (
    ANSWER,
    APPROVALS,
    check_approvals,
    example,
    script,
    scripted_user,
)

pytest.importorskip("fastapi", reason="the HTTP API needs the http extra: pip install -e '.[http]'")

from cli.http_api import configure_pod
from orchestrator.serving.http.address import host_http_info_path, parse_http_address
from orchestrator.serving.http.hosting import host_context
from orchestrator.serving.http.server import start_http

SLOW = [{"text": "word " * 200, "chunk_size": 5, "chunk_delay_s": 0.005}, {"text": "resumed"}]


@dataclass
class UserHost:
    host: Host
    url: str
    token: str


@pytest.fixture
async def user_host(tmp_path: Path) -> AsyncIterator[UserHost]:
    """This user's host with its API, where ``start_pod`` and ``connect_http`` look for them."""
    host = Host(idle_unload_s=3600, control_path=control_socket(), registry_path=tmp_path / "r")
    await host.start()
    server = await start_http(
        host_context(host, configure_pod),
        parse_http_address("127.0.0.1:0"),
        host_http_info_path(),
        announce=False,
    )
    info = json.loads(host_http_info_path().read_text())
    try:
        yield UserHost(host, info["url"], info["token"])
    finally:
        await server.stop()
        await host.close()


async def _pod(workspace: Path, **options: object) -> str:
    async with await start_pod(workspace, **options) as client:  # type: ignore[arg-type]
        return (await client.status()).name


async def test_the_three_examples_through_the_http_api(
    user_host: UserHost, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted_user(tmp_path, ANSWER)
    one = tmp_path / "one"
    one.mkdir()
    name = await _pod(one)
    assert await example("one_shot").main(name, "what is it?", http=True) == "finished"
    assert "The answer, streamed.\n[finished;" in capsys.readouterr().out

    asks = tmp_path / "asks"
    asks.mkdir()
    name = await _pod(
        asks, scripted_script=script(tmp_path / "a.json", APPROVALS), permission_mode="default"
    )
    check_approvals(asks, await example("approval").main(name, "note the fix", http=True))

    workspaces = [tmp_path / f"w{n}" for n in range(10)]
    for folder in workspaces:
        folder.mkdir()
    results = await example("ten_pods").main("go", workspaces, http=True)
    assert results == {f"w{n}": "finished" for n in range(10)}


async def test_typed_events_and_refusals_over_http(user_host: UserHost, tmp_path: Path) -> None:
    scripted_user(tmp_path, [*ANSWER, *ANSWER])
    (tmp_path / "p").mkdir()
    name = await _pod(tmp_path / "p")
    async with await connect_http(name) as pod:
        events = [event async for event in pod.run("hi")]
        assert isinstance(events[-1].payload, RunEndData)
        assert events[-1].payload.result == "finished"
        done = [e.payload for e in events if e.event == "text_done"]
        assert isinstance(done[0], TextData) and done[0].text == "The answer, streamed."
        status = await pod.status()
        assert isinstance(status, StatusData) and status.status == "idle"
        with pytest.raises(NotRunning):
            await pod.pause()
        with pytest.raises(NotPaused):
            await pod.resume()
        with pytest.raises(InvalidRequest):
            await pod.set_mode("root")
        with pytest.raises(InvalidRequest):
            [event async for event in pod.run("   ")]
        assert (await pod.status()).turn == status.turn  # nothing changed
    with pytest.raises(NotFound):
        await connect_http("nobody")
    with pytest.raises(Unauthorized):
        await HttpPodClient.connect(name, url=user_host.url, token="not-the-token")


async def test_a_cut_stream_is_caught_up_with_each_event_once(
    user_host: UserHost, tmp_path: Path
) -> None:
    (tmp_path / "p").mkdir()
    name = await _pod(tmp_path / "p", scripted_script=script_of(tmp_path, SLOW))
    async with await HttpPodClient.connect(name, url=user_host.url, token=user_host.token) as pod:
        reconnect, reconnects = pod.reconnect, []

        async def counted() -> None:
            reconnects.append(pod.last_eid)
            await reconnect()

        pod.reconnect = counted  # type: ignore[method-assign]
        events = []
        async for event in pod.run("go"):
            events.append(event)
            if sum(e.event == "text_delta" for e in events) in (5, 40):
                assert pod._stream is not None
                pod._stream.cancel()  # the stream drops mid-run, as a network would
                await asyncio.sleep(0)
        assert events[-1].event == "run_end"
    assert len(reconnects) == 2 and all(reconnects)  # from the last id, twice
    numbers = []
    for event in events:
        match = EVENT_ID_RE.fullmatch(event.eid or "")
        assert match is not None, event
        numbers.append(int(match["n"]))
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
    streamed = "".join(e.payload.text for e in events if e.event == "text_delta")  # type: ignore[union-attr]
    assert streamed == SLOW[0]["text"]


def script_of(tmp_path: Path, replies: list[dict[str, object]]) -> Path:
    path = tmp_path / "slow.json"
    path.write_text(json.dumps({"replies": replies}))
    return path


async def test_an_id_from_the_model_cannot_reach_another_route(
    user_host: UserHost, tmp_path: Path
) -> None:
    """Approval ids come from the model's tool calls: one shaped like a path must not turn an
    approval into a pause (or anything else)."""
    (tmp_path / "p").mkdir()
    slower = [{"text": "word " * 400, "chunk_size": 2, "chunk_delay_s": 0.05}]
    name = await _pod(tmp_path / "p", scripted_script=script_of(tmp_path, slower))
    async with await connect_http(name) as pod:
        seen = []
        async for event in pod.run("go"):
            seen.append(event.event)
            if event.event == "text_delta" and seen.count("text_delta") == 1:
                for hostile in ("../pause", "../../p/pause", "x/../../pause"):
                    with pytest.raises(PodRequestError):
                        await pod.approve(hostile)
                with pytest.raises(InvalidRequest):
                    await pod.deny("..")
                assert (await pod.status()).status == "running", seen
                await pod.cancel()
        assert isinstance(event.payload, RunEndData) and event.payload.result == "cancelled"


async def test_start_pod_refuses_a_name_the_host_serves_for_another_workspace(
    user_host: UserHost, tmp_path: Path
) -> None:
    scripted_user(tmp_path, ANSWER)
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
    assert await _pod(tmp_path / "a", name="same") == "same"
    with pytest.raises(ClientError, match="already serves a pod named same"):
        await _pod(tmp_path / "b", name="same")
    async with await start_pod(tmp_path / "a", name="same") as again:  # its own: joined
        assert Path((await again.status()).workspace) == (tmp_path / "a").resolve()


async def test_the_sync_wrapper_over_http(user_host: UserHost, tmp_path: Path) -> None:
    scripted_user(tmp_path, ANSWER)
    (tmp_path / "p").mkdir()
    name = await _pod(tmp_path / "p")

    def script() -> list[str]:  # what a plain script does, on a thread of this test's
        with SyncPod.connect(name, http=True) as pod:
            seen = [event.event for event in pod.run("hi")]
            try:
                pod.cancel()
            except NotRunning as exc:
                seen.append(exc.code)
            return seen

    seen = await asyncio.to_thread(script)
    assert seen[-2:] == ["run_end", "not_running"] and "text_delta" in seen
