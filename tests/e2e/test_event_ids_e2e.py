"""Event ids end to end, over a pod's real socket: a client that drops while a turn streams
comes back for exactly what it missed; after a restart, or a host's unload and reload, an old
id gets ``resync``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orchestrator.serving.client import PodClient, PodEvent
from orchestrator.serving.host import Host, ask_host
from orchestrator.serving.replay import split_eid
from tests.e2e.harness import ScriptedReply, collect_until, running_pod
from tests.orchestrator.serving.host.test_host import load, turn, wait_for_clients

STREAM = ScriptedReply(text="y" * 600, chunk_size=3, chunk_delay_s=0.005)
"""A reply of 200 deltas, streamed while clients come and go."""


@pytest.fixture
async def host(tmp_path: Path, short_dir: Path) -> AsyncIterator[Host]:
    served = Host(
        idle_unload_s=3600,
        control_path=short_dir / "host.sock",
        registry_path=tmp_path / "host-pods.json",
    )
    await served.start()
    try:
        yield served
    finally:
        await served.close()


def _ids(events: list[PodEvent]) -> list[str]:
    return [e.eid for e in events if e.eid is not None]


async def test_a_client_back_mid_stream_gets_exactly_what_it_missed(
    workspace: Path, short_dir: Path
) -> None:
    async with running_pod(workspace, short_dir, replies=[STREAM]) as pod:
        driver = await pod.client()
        watcher = await pod.client()
        await driver.status()
        await watcher.status()  # both connected before anything is broadcast
        await driver.send("run", {"input": "say a lot"})
        for _ in range(20):
            await watcher.wait_for("text_delta")
        left_at = watcher.last_eid
        assert left_at is not None
        await watcher.close()
        await driver.wait_for("text_delta")  # some go out while it is away
        for _ in range(10):
            await driver.wait_for("text_delta")
        back = await PodClient.connect(pod.socket, after=left_at)
        everything = await collect_until(driver, "run_end", timeout=60)
        caught_up = await collect_until(back, "run_end", timeout=60)
        # The driver saw every event from its own start, with no gap.
        epoch = split_eid(left_at)[0]
        numbers = [split_eid(e)[1] for e in _ids(everything)]
        assert all(split_eid(e)[0] == epoch for e in _ids(everything))
        assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
        # What came back is exactly the events after the one it last saw, in order, once.
        missed = [e for e in everything if e.eid and split_eid(e.eid)[1] > split_eid(left_at)[1]]
        assert _ids(caught_up) == _ids(missed)
        assert [(e.event, e.data) for e in caught_up] == [(e.event, e.data) for e in missed]
        assert any(e.event == "text_delta" for e in caught_up)  # it came back mid-stream
        await driver.close()
        await back.close()


async def test_an_id_from_before_a_restart_gets_resync(workspace: Path, short_dir: Path) -> None:
    async with running_pod(workspace, short_dir, replies=[ScriptedReply(text="one")]) as pod:
        client = await pod.client()
        await client.send("run", {"input": "hi"})
        await collect_until(client, "run_end")
        before = client.last_eid
        await client.close()
    assert before is not None
    async with running_pod(workspace, short_dir, replies=[], continue_=True) as pod:
        client = await PodClient.connect(pod.socket, after=before)
        resync = await client.next_event(timeout=10)
        assert resync is not None and resync.event == "resync"
        assert resync.data["reason"] == "restarted"
        assert resync.data["epoch"] != split_eid(before)[0]
        history = await client.history()  # what a client told to resync fetches
        assert [i["kind"] for i in history.items][:2] == ["user_message", "assistant"]
        await client.close()


async def test_a_pod_a_host_loads_again_is_a_new_start(
    host: Host, tmp_path: Path, short_dir: Path
) -> None:
    socket = await load(host, tmp_path, short_dir, "a")
    events = await turn(socket, "hello")
    last = _ids(events)[-1]
    await wait_for_clients(host, "a", 0)
    await ask_host("evict", {"name": "a"}, path=host.control_path)
    client = await PodClient.connect(socket, after=last)  # loads it again
    resync = await client.next_event(timeout=30)
    assert resync is not None and resync.event == "resync"
    assert resync.data["reason"] == "restarted" and resync.data["epoch"] != split_eid(last)[0]
    assert host.slots["a"].loads == 2
    await client.close()
