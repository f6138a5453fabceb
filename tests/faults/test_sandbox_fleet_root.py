"""A sandboxed command of a fleet pod cannot see the fleet's root: not the Ray token (with it
and `network = true`, a command reaches the host's loopback Ray and runs code outside every
sandbox), not the gateways' sockets (a command that reached its pod's socket could approve its
own calls), not the sessions. Against real Ray and real bwrap, with the root in the user's
home (outside /tmp, which the sandbox hides anyway). Skipped where Ray is not installed."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="the fleet extra (Ray) is not installed")

from orchestrator.serving.fleet.local import LocalNode, free_port
from tests.cli.helpers import pod
from tests.faults.sandbox_home import UserHome, user_home  # noqa: F401

pytestmark = [pytest.mark.fleet, pytest.mark.slow, pytest.mark.xdist_group("ray")]


async def run_all(socket: str, text: str) -> str:
    """Send one run; every line the pod wrote until it ended, as text."""
    reader, writer = await asyncio.open_unix_connection(socket)
    writer.write(json.dumps({"method": "run", "params": {"input": text}}).encode() + b"\n")
    lines: list[str] = []
    try:
        while True:
            line = (await asyncio.wait_for(reader.readline(), 120)).decode()
            lines.append(line)
            if json.loads(line)["event"] in ("run_end", "error"):
                return "".join(lines)
    finally:
        writer.close()


def test_a_fleet_pod_s_sandboxed_command_cannot_see_the_fleet_root(
    user_home: UserHome,  # noqa: F811
) -> None:
    if shutil.which("bwrap") is None:
        pytest.skip("needs bubblewrap")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "RAY_AUTH"))}
    root = user_home.home / "fleet"
    ray_dir = Path(tempfile.mkdtemp(prefix="pod-fr"))
    workspace = user_home.home / "ws"
    workspace.mkdir()
    # Markers the command's text does not hold: what it printed, not what it was asked.
    probe = (
        f"cat {root}/ray-token 2>/dev/null; echo entries-$(ls -A {root} | wc -l); "
        f"test -e {root}/ray-token; echo token-test-$?; echo probe-$((6*7))"
    )
    script = user_home.home / "script.json"
    tool = {"name": "bash", "input": {"command": probe}}
    script.write_text(
        json.dumps({"replies": [{"text": "look", "tool_calls": [tool]}, {"text": "ok"}]})
    )
    user_home.write_user_config(f'scripted_script = "{script}"\n\n[sandbox]\nmode = "on"\n')
    head = LocalNode(temp_dir=ray_dir, address="", label="", head=True)
    try:
        up = pod(env, "fleet", "up", "--root", str(root), "--ray-dir", str(ray_dir), "--port",
                 str(free_port()), "--hosts-per-node", "1", "--json", timeout=240)  # fmt: skip
        assert up.returncode == 0, up.stderr
        head = LocalNode(temp_dir=ray_dir, address="", label="", head=True,
                         client_port=json.loads(up.stdout)["ray_client_port"])  # fmt: skip
        add = pod(env, "fleet", "add", str(workspace), "--name", "app", "--provider", "scripted",
                  "--allow-bash", "--permission-mode", "yolo", "--root", str(root), "--json",
                  timeout=120)  # fmt: skip
        assert add.returncode == 0, add.stderr
        row = json.loads(add.stdout)
        assert row["config"]["sandbox"]["mode"] == "on"
        token = (root / "ray-token").read_text()

        seen = asyncio.run(run_all(row["socket"], "look around"))

        assert "probe-42" in seen, seen  # the command ran, in the sandbox
        assert token not in seen
        assert "token-test-1" in seen, seen  # no such file in there
        assert "entries-0" in seen, seen  # the root is an empty folder inside
        assert pod(env, "fleet", "down", "--root", str(root), timeout=240).returncode == 0
    finally:
        head.stop(timeout_s=5)
        shutil.rmtree(ray_dir, ignore_errors=True)
