"""Pods a host binds again from the registry a gone host left: served, but not the new host's
own until a client uses one, so a host that leaves with its last pod still leaves."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

from orchestrator.serving.client import PodClient
from orchestrator.serving.host import Host
from tests.orchestrator.serving.host.test_host import (
    history,
    listed,
    load,
    pod_config,
    turn,
    wait_for_clients,
)

CEILING_S = 60.0


async def _left_behind(tmp_path: Path, short_dir: Path, registry: Path) -> Path:
    """A host that detached (as a killed one would leave it) with pod ``old`` registered."""
    first = Host(control_path=short_dir / "h.sock", registry_path=registry)
    await first.start()
    old = await load(first, tmp_path, short_dir, "old")
    await turn(old, "remember me")
    await wait_for_clients(first, "old", 0)  # else it may not be unloaded, and is shut down
    await first.detach()
    return old


async def _shut_down(sock: Path) -> None:
    client = await PodClient.connect(sock)
    await client.send("shutdown")
    await client.close()


async def test_restored_pods_do_not_keep_an_exit_when_empty_host(
    tmp_path: Path, short_dir: Path
) -> None:
    registry = tmp_path / "reg.json"
    old = await _left_behind(tmp_path, short_dir, registry)
    host = Host(
        control_path=short_dir / "h.sock",
        registry_path=registry,
        exit_when_empty=True,
        idle_exit_s=0,
    )
    await host.start()
    try:
        assert host.slots["old"].restored
        new = await load(host, tmp_path, short_dir, "new")
        assert not host.slots["new"].restored
        await _shut_down(new)
        await asyncio.wait_for(host.stopped.wait(), CEILING_S)
    finally:
        await host.close()
    # The restored pod was not shut down: it is still registered, its session untouched.
    assert [e["config"]["name"] for e in json.loads(registry.read_text())] == ["old"]
    again = Host(
        control_path=short_dir / "h.sock",
        registry_path=registry,
        exit_when_empty=True,
        idle_exit_s=0,
    )
    await again.start()
    try:
        items = await history(old)  # a client used it: it is this host's own now
        assert [i["text"] for i in items if i["kind"] == "user_message"] == ["remember me"]
        assert not again.slots["old"].restored
        await _shut_down(old)
        await asyncio.wait_for(again.stopped.wait(), CEILING_S)
    finally:
        await again.close()
    assert not registry.exists()


async def test_an_entry_whose_socket_another_process_serves_is_dropped(
    tmp_path: Path, short_dir: Path
) -> None:
    registry = tmp_path / "reg.json"
    sock = short_dir / "taken.sock"
    entry = {"socket": str(sock), "config": pod_config(tmp_path, "taken")}
    registry.write_text(json.dumps([entry]))
    live = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    live.bind(str(sock))
    live.listen(1)  # a live listener of this process: not stale, so not taken over
    host = Host(control_path=short_dir / "h.sock", registry_path=registry)
    try:
        await host.start()
        assert host.slots == {} and await listed(host.control_path) == []
        assert json.loads(registry.read_text()) == []
    finally:
        await host.close()
        live.close()
