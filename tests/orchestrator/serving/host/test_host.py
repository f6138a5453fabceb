"""Many pods in one host process, over their real sockets: load on the first connection,
unload to the session file when idle, and come back exactly as they were."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from orchestrator.adapters.session import load_session
from orchestrator.config.model import PodConfig
from orchestrator.serving.client import PodClient
from orchestrator.serving.host import Host, HostError, ask_host
from tests.e2e.harness import collect_until


def pod_config(tmp_path: Path, name: str, **extra: Any) -> dict[str, Any]:
    workspace = tmp_path / name
    workspace.mkdir(exist_ok=True)
    (workspace / "README.md").write_text(f"# {name}\n")
    settings: dict[str, Any] = {
        "provider": "scripted",
        "sandbox": {"mode": "off"},
        "permissions": {"mode": "accept-edits"},
        "allow_bash": True,
        **extra,
    }
    config = PodConfig(workspace=workspace, name=name, **settings)
    return config.model_dump(mode="json")


async def load(host: Host, tmp_path: Path, short_dir: Path, name: str, **extra: Any) -> Path:
    row = await ask_host(
        "load",
        {"config": pod_config(tmp_path, name, **extra), "socket": str(short_dir / f"{name}.sock")},
        path=host.control_path,
    )
    return Path(row["socket"])


async def listed(control: Path) -> list[dict[str, Any]]:
    return (await ask_host("list", path=control))["pods"]  # type: ignore[no-any-return]


async def turn(socket: Path, text: str, until: str = "run_end") -> list[Any]:
    client = await PodClient.connect(socket)
    await client.send("run", {"input": text})
    events = await collect_until(client, until, timeout=30)
    await client.close()
    return events


async def history(socket: Path) -> list[dict[str, Any]]:
    client = await PodClient.connect(socket)
    items = (await client.request("get_history")).data["items"]
    await client.close()
    return items  # type: ignore[no-any-return]


async def wait_for_clients(host: Host, name: str, count: int) -> None:
    for _ in range(200):
        if host.slots[name].clients == count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{name} still has {host.slots[name].clients} clients")


async def test_pods_load_run_unload_and_come_back_the_same(
    host: Host, demo_at_once: None, tmp_path: Path, short_dir: Path
) -> None:
    a = await load(host, tmp_path, short_dir, "a")
    b = await load(host, tmp_path, short_dir, "b")
    first = await asyncio.gather(turn(a, "hello from a"), turn(b, "hello from b"))
    assert [events[-1].data["result"] for events in first] == ["finished", "finished"]
    before = await history(a)
    await wait_for_clients(host, "a", 0)
    await ask_host("evict", {"name": "a"}, path=host.control_path)
    rows = {r["name"]: r for r in await listed(host.control_path)}
    assert (rows["a"]["loaded"], rows["a"]["state"]) == (False, "unloaded")
    assert rows["b"]["loaded"] is True
    # The host's memory, and each loaded pod's share of what it grew by since it started.
    listing = await ask_host("list", path=host.control_path)
    stats, shares = listing["host"], {r["name"]: r["rss_share_bytes"] for r in listing["pods"]}
    assert (stats["pid"], stats["loaded"], stats["registered"]) == (os.getpid(), 1, 2)
    assert stats["rss_bytes"] > 0 and shares["a"] is None
    assert shares["b"] == max(0, stats["rss_bytes"] - stats["baseline_rss_bytes"])
    assert a.exists()  # the socket stays bound while the pod is unloaded
    # The first connection loads it again, from its session file: the same conversation.
    assert await history(a) == before
    assert host.slots["a"].loads == 2
    again = await turn(a, "and again")
    assert again[-1].data["result"] == "finished"
    assert len([i for i in await history(a) if i["kind"] == "user_message"]) == 2


async def test_a_registered_pod_loads_at_its_first_connection(
    host: Host, tmp_path: Path, short_dir: Path
) -> None:
    socket = short_dir / "r.sock"
    params = {"config": pod_config(tmp_path, "r"), "socket": str(socket)}
    row = await ask_host("register", params, path=host.control_path)
    assert (row["name"], row["loaded"], row["state"]) == ("r", False, "unloaded")
    assert socket.exists() and host.slots["r"].loads == 0
    with pytest.raises(HostError, match="already serves a pod named r"):
        await ask_host("register", params, path=host.control_path)
    with pytest.raises(HostError, match="register takes no owned pods"):
        config = pod_config(tmp_path, "o")
        await ask_host("register", {"config": config, "owned": True}, path=host.control_path)
    assert (await turn(socket, "hello"))[-1].data["result"] == "finished"
    assert host.slots["r"].loads == 1
    assert json.loads(host.registry_path.read_text())[0]["config"]["name"] == "r"


async def test_a_paused_turn_is_unloaded_and_resumes_after_the_reload(
    host: Host, tmp_path: Path, short_dir: Path
) -> None:
    socket = await load(host, tmp_path, short_dir, "p")
    client = await PodClient.connect(socket)
    await client.send("run", {"input": "run a long command"})
    await collect_until(client, "tool_output_delta", timeout=30)
    await client.send("pause")
    events = await collect_until(client, "run_end", timeout=30)
    assert events[-1].data["result"] == "paused"
    await client.close()
    await wait_for_clients(host, "p", 0)
    await ask_host("evict", {"name": "p"}, path=host.control_path)
    session = host.slots["p"].config.session
    assert session is not None and load_session(session).cut_off  # no shutdown: still open
    client = await PodClient.connect(socket)
    status = await client.status()
    assert status.status == "paused"
    await client.send("resume")
    ended = await collect_until(client, "run_end", timeout=60)
    assert ended[-1].data["result"] == "finished"
    results = [i for i in await history(socket) if i["kind"] == "tool_result"]
    assert len(results) == 1 and "Interrupted" in results[0]["summary"]  # never run twice
    await client.close()


async def test_eviction_is_refused_while_running_or_with_a_client(
    host: Host, tmp_path: Path, short_dir: Path
) -> None:
    socket = await load(host, tmp_path, short_dir, "busy")
    client = await PodClient.connect(socket)
    await client.send("run", {"input": "run a long command"})
    await collect_until(client, "tool_output_delta", timeout=30)
    with pytest.raises(HostError, match="stays loaded: a turn is running"):
        await ask_host("evict", {"name": "busy"}, path=host.control_path)
    await client.send("pause")
    await collect_until(client, "run_end", timeout=30)
    with pytest.raises(HostError, match="1 client"):
        await ask_host("evict", {"name": "busy"}, path=host.control_path)
    await client.close()
    await wait_for_clients(host, "busy", 0)
    await ask_host("evict", {"name": "busy"}, path=host.control_path)


async def test_an_approval_waiting_keeps_the_pod_loaded(
    host: Host, tmp_path: Path, short_dir: Path
) -> None:
    socket = await load(
        host, tmp_path, short_dir, "ask", permissions={"mode": "default"}, allow_bash=False
    )
    client = await PodClient.connect(socket)
    await client.send("run", {"input": "run a command"})
    await collect_until(client, "approval_request", timeout=30)
    await client.close()
    await wait_for_clients(host, "ask", 0)
    with pytest.raises(HostError, match="1 approval waits for an answer"):
        await ask_host("evict", {"name": "ask"}, path=host.control_path)


async def test_idle_pods_unload_by_themselves_and_the_cap_unloads_the_oldest(
    demo_at_once: None, tmp_path: Path, short_dir: Path
) -> None:
    host = Host(
        idle_unload_s=0.5, max_loaded=2, control_path=short_dir / "h.sock",
        registry_path=tmp_path / "reg.json",
    )  # fmt: skip
    await host.start()
    try:
        sockets = [await load(host, tmp_path, short_dir, n) for n in ("x", "y")]
        for socket in sockets:
            await turn(socket, "hi")
        await load(host, tmp_path, short_dir, "z")  # a third: x, used least recently, goes
        rows = {r["name"]: r["loaded"] for r in await listed(host.control_path)}
        assert rows == {"x": False, "y": True, "z": True}
        for _ in range(100):
            if not any(slot.loaded for slot in host.slots.values()):
                break
            await asyncio.sleep(0.1)
        assert not any(slot.loaded for slot in host.slots.values())
    finally:
        await host.close()


async def test_shutdown_of_one_pod_forgets_it_and_a_restarted_host_serves_the_rest(
    demo_at_once: None, tmp_path: Path, short_dir: Path
) -> None:
    registry = tmp_path / "reg.json"
    host = Host(control_path=short_dir / "h.sock", registry_path=registry)
    await host.start()
    keep = await load(host, tmp_path, short_dir, "keep")
    gone = await load(host, tmp_path, short_dir, "gone")
    await turn(keep, "remember me")
    client = await PodClient.connect(gone)
    await client.send("shutdown")
    await client.close()
    for _ in range(100):
        if "gone" not in host.slots:
            break
        await asyncio.sleep(0.05)
    assert "gone" not in host.slots and not gone.exists()
    saved = json.loads(registry.read_text())
    assert [Path(e["socket"]).name for e in saved] == ["keep.sock"]
    # As after a crash of the host: its pods are bound again and load on demand.
    await host.detach()
    again = Host(control_path=short_dir / "h.sock", registry_path=registry)
    await again.start()
    try:
        assert [r["loaded"] for r in await listed(again.control_path)] == [False]
        items = await history(keep)
        assert [i["text"] for i in items if i["kind"] == "user_message"] == ["remember me"]
    finally:
        await again.close()


async def test_an_unloaded_pod_leaves_no_controller_behind(
    host: Host, tmp_path: Path, short_dir: Path
) -> None:
    import gc
    import weakref

    socket = await load(host, tmp_path, short_dir, "gone")
    await turn(socket, "hello")
    await wait_for_clients(host, "gone", 0)
    served = host.slots["gone"].served
    assert served is not None
    controller = weakref.ref(served.controller)
    del served
    await ask_host("evict", {"name": "gone"}, path=host.control_path)
    for _ in range(100):  # the host frees evicted pods a second after the last eviction
        gc.collect()
        if controller() is None:
            break
        await asyncio.sleep(0.05)
    assert controller() is None


async def test_long_requests_and_replies_fit_the_control_socket(
    host: Host, tmp_path: Path, short_dir: Path
) -> None:
    # A configuration of 200 KB (one long agent prompt) is one request line, and the
    # list of many pods one reply line: both past asyncio's 64 KiB default.
    agents = {"reviewer": {"description": "reviews", "system_prompt": "Be thorough. " * 16_000}}
    await load(host, tmp_path, short_dir, "long", agents=agents)
    rows = await listed(host.control_path)
    assert [row["name"] for row in rows] == ["long"]


async def test_pods_of_one_host_ask_the_models_api_once(
    host: Host, tmp_path: Path, short_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conformance.fake_api import FakeAnthropic

    with FakeAnthropic() as api:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
        sockets = [
            await load(host, tmp_path, short_dir, name, provider="anthropic", model="fake-model")
            for name in ("one", "two")
        ]
        ends = await asyncio.gather(*(turn(socket, "hello") for socket in sockets))
        assert [events[-1].data["result"] for events in ends] == ["finished", "finished"]
        assert len(api.requests) == 2  # one turn each
        assert [r.path for r in api.lookups if r.path.startswith("/v1/models")] == [
            "/v1/models/fake-model"
        ]


async def test_an_owned_pod_ends_with_its_connection_and_is_never_in_the_registry(
    host: Host, tmp_path: Path, short_dir: Path
) -> None:
    from orchestrator.config.paths import pod_info_path
    from orchestrator.serving.host import HostConnection

    kept = await load(host, tmp_path, short_dir, "kept")
    sockets = {}
    connections = []
    for name in ("released", "dropped"):
        connection = await HostConnection.open(host.control_path)
        params = {
            "config": pod_config(tmp_path, name),
            "socket": str(short_dir / f"{name}.sock"),
            "owned": True,
        }
        sockets[name] = Path((await connection.request("load", params))["socket"])
        connections.append(connection)
        await turn(sockets[name], f"hello {name}")
    saved = json.loads(host.registry_path.read_text())
    assert [Path(entry["socket"]).name for entry in saved] == ["kept.sock"]
    released, dropped = connections
    assert await released.request("release") == ["released"]
    assert "released" not in host.slots and not sockets["released"].exists()
    assert not pod_info_path(sockets["released"]).exists()
    await dropped.close()  # as when its owner is killed: the host sees the connection end
    for _ in range(200):
        if "dropped" not in host.slots:
            break
        await asyncio.sleep(0.05)
    assert set(host.slots) == {"kept"} and not sockets["dropped"].exists()
    assert host.slots["kept"].loaded and kept.exists()  # the others' ends left it alone
    await released.close()


async def test_a_task_child_of_a_hosted_pod_is_a_pod_of_the_same_host(
    host: Host, tmp_path: Path, short_dir: Path
) -> None:
    go = tmp_path / "go"
    child_script = tmp_path / "child.json"
    wait = {"name": "bash", "input": {"command": f"while [ ! -e {go} ]; do sleep 0.05; done"}}
    child_script.write_text(
        json.dumps({"replies": [{"tool_calls": [wait]}, {"text": "the child's answer"}]})
    )
    parent_script = tmp_path / "parent.json"
    task = {"name": "task", "input": {"prompt": "wait for go", "name": "waiter"}}
    parent_script.write_text(
        json.dumps({"replies": [{"tool_calls": [task]}, {"text": "the parent is done"}]})
    )
    socket = await load(
        host, tmp_path, short_dir, "parent",
        scripted_script=str(parent_script), subpods={"child_script": str(child_script)},
    )  # fmt: skip
    ended = asyncio.ensure_future(turn(socket, "delegate"))
    for _ in range(600):
        children = [slot for slot in host.slots.values() if slot.name != "parent"]
        if children and children[0].loaded and children[0].clients:
            break
        await asyncio.sleep(0.05)
    [child] = children
    assert child.name.startswith("parent.waiter-") and child.owned
    [row] = [r for r in host.rows() if r.name == child.name]
    assert (row.parent, row.loaded) == ("parent", True)
    saved = json.loads(host.registry_path.read_text())
    assert [Path(entry["socket"]).name for entry in saved] == ["parent.sock"]
    go.touch()
    events = await ended
    assert events[-1].data["result"] == "finished"
    [result] = [i for i in await history(socket) if i["kind"] == "tool_result"]
    assert "the child's answer" in json.dumps(result)
    # A finished child is shut down at once: the host forgot it, its session stays.
    for _ in range(200):
        if set(host.slots) == {"parent"}:
            break
        await asyncio.sleep(0.05)
    assert set(host.slots) == {"parent"}
    assert child.config.session is not None and child.config.session.exists()


async def test_a_pod_whose_write_is_fenced_tells_its_clients_and_its_host_once(
    host: Host, tmp_path: Path, short_dir: Path
) -> None:
    from orchestrator.adapters.session import Fence
    from orchestrator.core.history import UserMessage
    from orchestrator.serving.fleet import Epochs, MemoryKV
    from orchestrator.serving.host import PodSlot

    # Registered, not loaded: its first load writes under the fence, as a fleet host's does.
    config = PodConfig.model_validate(pod_config(tmp_path, "f"))
    slot = await host.register(config, short_dir / "f.sock", continue_=False)
    socket = slot.socket_path
    epochs = Epochs(MemoryKV())
    slot.fence = Fence(pod="f", epoch=epochs.take("f", host="here"), store=epochs)
    told: list[PodSlot] = []
    slot.on_fenced = told.append
    assert (await turn(socket, "one"))[-1].data["result"] == "finished"
    epochs.take("f", host="elsewhere")  # another host took the pod over

    client = await PodClient.connect(socket)
    await client.send("run", {"input": "two"})
    events = await collect_until(client, "alert", timeout=30, level="error")
    await client.close()
    assert "another host took the pod over" in events[-1].data["message"]
    assert told == [slot]
    # Nothing of the second run reached the file; the first is whole.
    assert slot.config.session is not None
    assert slot.config.session.read_bytes().startswith(b'{"epoch": 1, ')
    items = load_session(slot.config.session).items
    assert [i.text for i in items if isinstance(i, UserMessage)] == ["one"]


async def test_evictions_in_a_row_free_memory_a_second_after_the_first(
    host: Host, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A host at its cap evicts on every load: a release postponed by each eviction would
    # never come while loads go on, and every evicted pod's objects would pile up.
    import orchestrator.serving.host.pods as pods_module
    from orchestrator.serving.host.memory import release_unloaded

    released: list[int] = []

    def release() -> None:
        released.append(1)
        release_unloaded()

    monkeypatch.setattr(pods_module, "release_unloaded", release)
    host._release_soon()  # the first eviction of a burst
    timer = host._release
    assert timer is not None
    due = timer.when()
    for _ in range(5):  # more evictions: the release stays where the first one put it
        await asyncio.sleep(0)
        host._release_soon()
        assert host._release is timer and timer.when() == due
    timer._run()  # its time came (run as the loop would, without waiting for it)
    assert released == [1] and host._release is None
    host._release_soon()  # the next burst schedules a release of its own
    assert host._release is not None and host._release is not timer


async def test_a_pods_row_says_what_its_session_cost_loaded_and_unloaded(
    host: Host, tmp_path: Path, short_dir: Path
) -> None:
    # The scripted provider's model, priced as a user's [prices] table would.
    prices = {"scripted-demo": {"input": 3.0, "output": 15.0}}
    socket = await load(host, tmp_path, short_dir, "spender", prices=prices)
    unpriced = await load(host, tmp_path, short_dir, "unpriced")
    await turn(unpriced, "hello")
    rows = {row["name"]: row for row in await listed(host.control_path)}
    assert rows["spender"]["cost_usd"] == 0.0 and rows["unpriced"]["cost_usd"] is None
    assert (await turn(socket, "hello"))[-1].data["result"] == "finished"
    client = await PodClient.connect(socket)
    status = await client.status()
    await client.close()
    assert status.cost_usd is not None and status.cost_usd > 0
    rows = {row["name"]: row for row in await listed(host.control_path)}
    assert rows["spender"]["cost_usd"] == status.cost_usd
    # Unloaded, the row keeps what the session cost; the host does not load it to ask.
    await wait_for_clients(host, "spender", 0)
    await ask_host("evict", {"name": "spender"}, path=host.control_path)
    row = {row["name"]: row for row in await listed(host.control_path)}["spender"]
    assert (row["loaded"], row["cost_usd"]) == (False, status.cost_usd)
    assert host.slots["spender"].loads == 1
