"""A gateway's start: made again after it failed part-way, and made by the actor's
constructor (Ray not running: the directory is kept in memory)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray", reason="the fleet extra (Ray) is not installed")

from orchestrator.serving.fleet import MemoryKV, gateway
from orchestrator.serving.fleet.cluster import GatewayActor
from orchestrator.serving.fleet.directory import Directory, FleetSettings
from orchestrator.serving.server import socket_is_live


@pytest.fixture
def fleet_root(short_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fleet's root, with its directory (the settings) in memory instead of Ray's KV."""
    kv = MemoryKV()
    Directory(kv).save_settings(FleetSettings(root=str(short_dir), token="t"))
    monkeypatch.setattr(gateway, "RayKV", lambda: kv)
    return short_dir


async def test_a_start_that_failed_in_sync_is_made_again_without_binding_twice(
    fleet_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A gateway Ray restarted after a node's loss: its first sync may find the GCS still
    # unreachable. The retry must not trip over the control socket it already bound.
    node = gateway.Gateway("node0123456789")
    calls = {"n": 0}
    listed = node.directory.pods

    def unreachable_once() -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise ConnectionError("the GCS is unreachable")
        return listed()

    monkeypatch.setattr(node.directory, "pods", unreachable_once)
    with pytest.raises(ConnectionError):
        await node.start()
    control = node.dir / "control.sock"
    assert socket_is_live(control)  # bound before the failure, and kept
    out = await node.start()
    assert out["dir"] == str(node.dir) and calls["n"] == 2
    assert socket_is_live(control)
    await node.stop()
    assert not control.exists()


async def test_a_gateway_actor_binds_from_its_constructor_without_calling_itself(
    fleet_root: Path,
) -> None:
    # What Ray runs again when it restarts the actor. A call to itself made there could fail
    # ("the actor is restarting") and never run; a task of the constructor's loop cannot.
    actor = GatewayActor("node0123456789", 0)  # outside Ray: there is no actor to call
    control = gateway.gateway_dir(fleet_root, "node0123456789") / "control.sock"
    for _ in range(100):
        if socket_is_live(control):
            break
        await asyncio.sleep(0.05)
    assert socket_is_live(control)
    assert (await actor.start())["dir"] == str(control.parent)  # deploy's start only reports
    await actor.stop()
    assert not control.exists()
