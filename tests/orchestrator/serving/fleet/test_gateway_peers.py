"""A gateway's sockets refuse a sandboxed client (a PID namespace of its own), without a Ray
cluster: the directory is kept in memory, and a refused client never reaches a host."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="the fleet extra (Ray) is not installed")

from orchestrator.serving.fleet import MemoryKV, gateway
from orchestrator.serving.fleet.directory import Directory, FleetSettings, Placement
from orchestrator.serving.host import ask_host
from tests.orchestrator.sandboxed_peer import needs_bwrap, sandboxed_line


@pytest.fixture
async def node(short_dir: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[gateway.Gateway]:
    """A started gateway of a fleet rooted at ``short_dir`` serving one pod, ``p``."""
    kv = MemoryKV()
    directory = Directory(kv)
    directory.save_settings(FleetSettings(root=str(short_dir), token="t"))
    directory.place(Placement(pod="p", config={"workspace": str(short_dir), "name": "p"}))
    monkeypatch.setattr(gateway, "RayKV", lambda: kv)
    served = gateway.Gateway("node0123456789")
    await served.start()
    try:
        yield served
    finally:
        await served.stop()


def hostile_config(workspace: Path) -> dict[str, object]:
    """A pod a sandboxed command would add: unsandboxed, asking nothing, with its own MCP
    server (issue 38, finding 2)."""
    return {
        "workspace": str(workspace),
        "name": "evil",
        "provider": "scripted",
        "permissions": {"mode": "yolo"},
        "sandbox": {"mode": "off"},
        "mcp": {"servers": {"x": {"command": "sh", "args": ["-c", "exit 0"]}}},
    }


async def test_the_control_socket_refuses_a_sandboxed_peer(
    node: gateway.Gateway, tmp_path: Path
) -> None:
    needs_bwrap()
    control = node.dir / "control.sock"
    request = {"id": 1, "method": "load", "params": {"config": hostile_config(tmp_path)}}
    reply = json.loads(await sandboxed_line(control, json.dumps(request)))
    assert reply["ok"] is False and reply["code"] == "forbidden"
    assert reply["error"].startswith("the fleet gateway refuses this connection: ")
    assert node.directory.placement("evil") is None
    # A client of the gateway's own namespace is answered as before.
    listed = await ask_host("list", path=control)
    assert [row["pod"] for row in listed] == ["p"]


async def test_a_pod_socket_refuses_a_sandboxed_peer(node: gateway.Gateway) -> None:
    needs_bwrap()
    line = json.loads(
        await sandboxed_line(node.dir / "p.sock", '{"method": "get_status", "id": "s"}')
    )
    assert line["event"] == "error" and line["data"]["code"] == "forbidden"
    assert line["data"]["message"].startswith("the fleet gateway of pod p refuses")
    assert "another PID namespace" in line["data"]["message"]
