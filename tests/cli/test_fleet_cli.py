"""``pod fleet up|add|status|down`` as a person runs them, against a Ray head they start on
this machine; skipped where Ray is not installed or cannot start."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="the fleet extra (Ray) is not installed")

from orchestrator.fleet import FleetError
from orchestrator.fleet.local import LocalNode, free_port, start_node
from tests.cli.helpers import pod

# One worker runs every Ray test, one after the other: the kill bench's driver shuts Ray down
# in its process, which would take a fleet fixture of the same worker with it.
pytestmark = [pytest.mark.fleet, pytest.mark.slow, pytest.mark.xdist_group("ray")]


async def run_through(socket: str, text: str) -> list[str]:
    reader, writer = await asyncio.open_unix_connection(socket)
    writer.write(json.dumps({"method": "run", "params": {"input": text}}).encode() + b"\n")
    names: list[str] = []
    try:
        while True:
            event = json.loads(await asyncio.wait_for(reader.readline(), 60))["event"]
            names.append(event)
            if event in ("run_end", "error"):
                return names
    finally:
        writer.close()


def test_a_fleet_is_started_used_reported_and_stopped_alone(
    env: dict[str, str], tmp_path: Path, short_dir: Path
) -> None:
    # Somebody else's Ray on the same machine: `pod fleet down` must leave it running.
    try:
        other = start_node(short_dir / "other-ray", label="someone_else")
    except FleetError as exc:
        pytest.skip(str(exc))
    ray_dir, port = short_dir / "fleet-ray", free_port()
    address = f"127.0.0.1:{port}"
    env = {**env, "RAY_AUTH_MODE": "disabled"}
    try:
        up = pod(env, "fleet", "up", "--root", str(short_dir / "fleet"), "--ray-dir",
                 str(ray_dir), "--port", str(port), "--hosts-per-node", "1",
                 timeout=240)  # fmt: skip
        assert up.returncode == 0, up.stderr
        assert json.loads(up.stdout)["address"] == address

        workspace = tmp_path / "app"
        workspace.mkdir()
        add = pod(env, "fleet", "add", str(workspace), "--name", "app", "--provider",
                  "scripted", "--address", address, timeout=120)  # fmt: skip
        assert add.returncode == 0, add.stderr
        socket = json.loads(add.stdout)["socket"]
        assert asyncio.run(run_through(socket, "hello"))[-1] == "run_end"

        shown = pod(env, "fleet", "status", "--address", address, "--json", timeout=120)
        assert shown.returncode == 0, shown.stderr
        report = json.loads(shown.stdout)
        assert len(report["hosts"]) == 1 and report["hosts"][0]["pods"] == 1
        [line] = report["pods"]
        assert (line["pod"], line["epoch"]) == ("app", 1)
        assert line["state"] in ("idle", "unloaded") and line["pinned_machine"]
        text = pod(env, "fleet", "status", "--address", address, timeout=120).stdout
        assert "pod app" in text and "pinned to" in text

        down = pod(env, "fleet", "down", "--address", address, timeout=240)
        assert down.returncode == 0, down.stderr
        assert "the Ray head it started" in down.stdout
        head = LocalNode(temp_dir=ray_dir.resolve(), address=address, label="", head=True)
        assert head.processes() == []
        assert other.processes() != []  # the other cluster still runs
        again = pod(env, "fleet", "status", "--address", address, timeout=120)
        assert again.returncode != 0 and again.stderr.strip()
    finally:
        LocalNode(temp_dir=ray_dir.resolve(), address="", label="", head=True).stop(timeout_s=5)
        other.stop(timeout_s=5)
