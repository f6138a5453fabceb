"""A fleet on a real one-node Ray cluster: clients through the gateway, a host actor killed
and restarted, a pod taken over by another host. Skipped where Ray is not installed (the
``fleet`` extra) or cannot start."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray", reason="the fleet extra (Ray) is not installed")

from orchestrator.adapters.session import load_session  # noqa: E402
from orchestrator.core.history import UserMessage  # noqa: E402
from orchestrator.serving.fleet.cluster import deploy, start_local, status, teardown  # noqa: E402
from orchestrator.serving.fleet.directory import NAMESPACE, Directory, FleetError  # noqa: E402
from orchestrator.serving.fleet.raykv import RayKV  # noqa: E402
from orchestrator.serving.host import HostError, ask_host  # noqa: E402
from tests.orchestrator.sandboxed_peer import needs_bwrap, sandboxed_line  # noqa: E402

# One worker runs every Ray test, one after the other: the kill bench's driver shuts Ray down
# in its process, which would take a fleet fixture of the same worker with it.
pytestmark = [pytest.mark.fleet, pytest.mark.slow, pytest.mark.xdist_group("ray")]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A one-node cluster of this process with two hosts and a gateway; the gateway's dir."""
    root = tmp_path_factory.mktemp("fleet")
    try:
        start_local()
    except FleetError as exc:  # no shared memory, no ports: say so instead of failing
        pytest.skip(str(exc))
    try:
        out = deploy(root, hosts_per_node=2)
        (gateway,) = out["gateways"].values()
        yield Path(gateway["dir"])
        teardown()
    finally:
        ray.shutdown()


async def add_pod(gateway: Path, workspace: Path, name: str) -> dict[str, Any]:
    config: dict[str, Any] = {"workspace": str(workspace), "name": name, "provider": "scripted"}
    config["sandbox"] = {"mode": "off"}
    # A gateway Ray is restarting (a test before this one killed it) binds its sockets again
    # once its process is up: slow on a loaded machine, so a client asks again meanwhile.
    deadline = asyncio.get_running_loop().time() + 60
    while True:
        try:
            row: dict[str, Any] = await ask_host(
                "load", {"config": config}, path=gateway / "control.sock"
            )
            return row
        except HostError:
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.2)


async def run(socket: str, line: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Send one line and read events until its run ends or it is refused."""
    reader, writer = await asyncio.open_unix_connection(socket)
    writer.write(json.dumps(line).encode() + b"\n")
    seen: list[tuple[str, dict[str, Any]]] = []
    try:
        while True:
            raw = json.loads(await asyncio.wait_for(reader.readline(), 60))
            seen.append((raw["event"], raw["data"]))
            if raw["event"] in ("run_end", "error"):
                return seen
    finally:
        writer.close()


async def left(host: Any, pod: str) -> None:
    """Wait until the host counts no client of the pod (a gateway closes its side of a
    connection after the client's, asynchronously)."""
    for _ in range(200):
        info = await host.info.remote()
        if all(row["clients"] == 0 for row in info["pods"] if row["name"] == pod):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"a client of {pod} never left")


def user_messages(session: str) -> list[tuple[str, str | None]]:
    items = load_session(Path(session)).items
    return [(i.text, i.request_id) for i in items if isinstance(i, UserMessage)]


async def test_a_run_through_the_gateway_is_the_pod_s_own(fleet: Path, workspace: Path) -> None:
    row = await add_pod(fleet, workspace, "alpha")
    events = await run(row["socket"], {"method": "run", "params": {"input": "hi"}})
    names = [name for name, _ in events]
    assert names[0] == "status" and names[-1] == "run_end"
    assert "text_delta" in names and "turn_end" in names
    session = row["config"]["session"]
    lines = Path(session).read_bytes().splitlines()
    assert all(line.startswith(b'{"epoch": 1, ') for line in lines)
    ((text, request_id),) = user_messages(session)
    assert text == "hi" and request_id is not None and request_id.startswith("gw-")
    (line,) = [p for p in status().pods if p.pod == "alpha"]
    assert (line.epoch, line.state, line.loaded) == (1, "idle", True)
    assert line.host is not None and line.host.startswith("pod-host-")


async def test_a_restarted_host_takes_a_new_epoch_and_a_replayed_run_is_not_run_twice(
    fleet: Path, workspace: Path
) -> None:
    row = await add_pod(fleet, workspace, "bravo")
    first = {"method": "run", "params": {"input": "once", "request_id": "client-1"}}
    assert (await run(row["socket"], first))[-1] == ("run_end", {"result": "finished"})
    directory = Directory(RayKV())
    placement = directory.placement("bravo")
    assert placement is not None and placement.host is not None
    host = ray.get_actor(placement.host, namespace=NAMESPACE)
    ray.kill(host, no_restart=False)  # the process dies; Ray starts it again

    replayed = await run(row["socket"], first)
    assert replayed[-1][0] == "error" and replayed[-1][1]["code"] == "duplicate"
    assert user_messages(row["config"]["session"]) == [("once", "client-1")]
    after = directory.placement("bravo")
    assert after is not None and (after.host, after.epoch) == (placement.host, 2)
    # The next run is a new one, written under the new epoch.
    again = {"method": "run", "params": {"input": "twice", "request_id": "client-2"}}
    assert (await run(row["socket"], again))[-1] == ("run_end", {"result": "finished"})
    assert Path(row["config"]["session"]).read_bytes().splitlines()[-1].startswith(b'{"epoch": 2, ')


async def test_a_pod_taken_over_by_another_host_is_served_there(
    fleet: Path, workspace: Path
) -> None:
    row = await add_pod(fleet, workspace, "charlie")
    await run(row["socket"], {"method": "run", "params": {"input": "one"}})
    directory = Directory(RayKV())
    before = directory.placement("charlie")
    assert before is not None and before.host is not None
    old = ray.get_actor(before.host, namespace=NAMESPACE)
    other = next(h.name for h in directory.hosts() if h.name != before.host)
    await left(old, "charlie")
    await old.evict.remote("charlie")  # unloaded: its session file is free to claim
    taken = await ray.get_actor(other, namespace=NAMESPACE).acquire.remote("charlie")
    assert (taken["host"], taken["epoch"]) == (other, before.epoch + 1)

    await run(row["socket"], {"method": "run", "params": {"input": "two"}})
    assert [text for text, _ in user_messages(row["config"]["session"])] == ["one", "two"]
    now = directory.placement("charlie")
    assert now is not None and now.host == other
    # The old host, asked to serve it again, finds itself superseded and takes it back
    # under a newer epoch rather than writing under its old one.
    await left(ray.get_actor(other, namespace=NAMESPACE), "charlie")
    await ray.get_actor(other, namespace=NAMESPACE).evict.remote("charlie")
    back = await old.acquire.remote("charlie")
    assert back["epoch"] == before.epoch + 2
    assert load_session(Path(row["config"]["session"])).warnings == []


async def refused(socket: str) -> str:
    """The message of the error a gateway answers a client with at once."""
    events = await run(socket, {"method": "get_status"})
    assert events[-1][0] == "error", events
    return str(events[-1][1]["message"])


async def test_a_pod_pinned_to_a_machine_without_a_host_is_unavailable(
    fleet: Path, workspace: Path
) -> None:
    row = await add_pod(fleet, workspace, "delta")
    directory = Directory(RayKV())
    placed = directory.placement("delta")
    # Its workspace (the test's tmp dir) is not under the fleet's root: pinned to this machine.
    assert placed is not None and placed.pinned_machine == socket.gethostname()
    # As if it had been added on a machine whose nodes are all down.
    directory.place(placed.model_copy(update={"pinned_machine": "gone-machine"}))
    assert "pinned to machine gone-machine" in await refused(row["socket"])
    (line,) = [p for p in status().pods if p.pod == "delta"]
    assert (line.state, line.pinned_machine) == ("unavailable", "gone-machine")
    assert "no live node" in line.why
    # Its host restarted on another machine: that host will not serve it without its files.
    host = directory.hosts()[0].name
    directory.place(placed.model_copy(update={"pinned_machine": "gone-machine", "host": host}))
    assert f"this host runs on {socket.gethostname()}" in await refused(row["socket"])
    # Back on its machine, it is served again.
    directory.place(placed)
    events = await run(row["socket"], {"method": "run", "params": {"input": "hello"}})
    assert events[-1] == ("run_end", {"result": "finished"})


async def test_a_pod_a_client_shuts_down_leaves_the_fleet(fleet: Path, workspace: Path) -> None:
    row = await add_pod(fleet, workspace, "echo")
    await run(row["socket"], {"method": "run", "params": {"input": "hi"}})
    reader, writer = await asyncio.open_unix_connection(row["socket"])
    writer.write(b'{"method": "shutdown"}\n')
    while await asyncio.wait_for(reader.readline(), 60):
        pass  # the pod closes the connection once it has stopped
    writer.close()
    directory = Directory(RayKV())
    for _ in range(100):
        if directory.placement("echo") is None and not Path(row["socket"]).exists():
            break
        await asyncio.sleep(0.1)
    assert directory.placement("echo") is None
    assert not Path(row["socket"]).exists()  # the gateway unbound it
    assert "echo" not in [p.pod for p in status().pods]
    assert user_messages(row["config"]["session"]) != []  # its session stays


async def test_a_sandboxed_client_is_refused_by_the_gateway(fleet: Path, workspace: Path) -> None:
    # Issue 38, finding 2: a command in a sandbox (a PID namespace of its own) reached
    # <root>/gw-*/control.sock and loaded a pod of its own configuration.
    needs_bwrap()
    row = await add_pod(fleet, workspace, "hotel")
    hostile = {"workspace": str(workspace), "name": "evil", "provider": "scripted"}
    hostile |= {"permissions": {"mode": "yolo"}, "sandbox": {"mode": "off"}}
    load = {"id": 1, "method": "load", "params": {"config": hostile}}
    reply = json.loads(await sandboxed_line(fleet / "control.sock", json.dumps(load)))
    assert (reply["ok"], reply["code"]) == (False, "forbidden")
    assert Directory(RayKV()).placement("evil") is None
    status_line = '{"method": "get_status", "id": "s"}'
    refused = json.loads(await sandboxed_line(Path(row["socket"]), status_line))
    assert (refused["event"], refused["data"]["code"]) == ("error", "forbidden")
    # The same pod serves a client of this namespace.
    events = await run(row["socket"], {"method": "run", "params": {"input": "hi"}})
    assert events[-1] == ("run_end", {"result": "finished"})
