"""A gateway's start made again after it failed part-way (Ray not running: the directory is
kept in memory)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray", reason="the fleet extra (Ray) is not installed")

from orchestrator.fleet import MemoryKV, gateway
from orchestrator.fleet.directory import Directory, FleetSettings
from orchestrator.server import socket_is_live


async def test_a_start_that_failed_in_sync_is_made_again_without_binding_twice(
    short_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A gateway Ray restarted after a node's loss: its first sync may find the GCS still
    # unreachable. The retry must not trip over the control socket it already bound.
    kv = MemoryKV()
    Directory(kv).save_settings(FleetSettings(root=str(short_dir), token="t"))
    monkeypatch.setattr(gateway, "RayKV", lambda: kv)
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
