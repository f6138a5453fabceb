"""``pod fleet up|add|status|down`` as a person runs them, with two fleets on one machine:
each command acts on its own fleet's cluster (``--root``), refuses to guess between them,
and a fleet's head listens on loopback only and refuses a Ray client without its token.
Skipped where Ray is not installed or cannot start."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray", reason="the fleet extra (Ray) is not installed")

from orchestrator.serving.fleet.local import LocalNode, free_port
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


async def status_of(socket: str) -> dict[str, Any]:
    """The pod's ``status`` reply to ``get_status``."""
    reader, writer = await asyncio.open_unix_connection(socket)
    writer.write(json.dumps({"method": "get_status", "id": "s"}).encode() + b"\n")
    try:
        while True:
            line = json.loads(await asyncio.wait_for(reader.readline(), 60))
            if line["event"] == "status" and line["data"].get("id") == "s":
                data: dict[str, Any] = line["data"]
                return data
    finally:
        writer.close()


USER_CONFIG = """
[sandbox]
mode = "on"

[[hooks.PreToolUse]]
matcher = "bash"
[[hooks.PreToolUse.hooks]]
type = "command"
command = "/bin/true"
"""


def _address(hex_address: str) -> str:
    """An address of /proc/net/tcp{,6} (hex, each 32-bit word little-endian) as text."""
    raw = bytes.fromhex(hex_address)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(words))


def listeners(pids: list[int]) -> list[tuple[int, str, int]]:
    """Every TCP socket these processes listen on: (pid, address, port)."""
    inodes: dict[str, int] = {}
    for pid in pids:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes[target[8:-1]] = pid
        except OSError:
            continue  # it ended meanwhile
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and inode in inodes:  # 0A: LISTEN
                host, port = local.split(":")
                found.append((inodes[inode], _address(host), int(port, 16)))
    return found


def is_loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


def fleet_up(env: dict[str, str], root: Path, ray_dir: Path, port: int) -> dict[str, object]:
    done = pod(env, "fleet", "up", "--root", str(root), "--ray-dir", str(ray_dir),
               "--port", str(port), "--hosts-per-node", "1", "--json",
               timeout=240)  # fmt: skip
    assert done.returncode == 0, done.stderr
    out: dict[str, object] = json.loads(done.stdout)
    return out


def pods_of(env: dict[str, str], root: Path) -> list[str]:
    shown = pod(env, "fleet", "status", "--root", str(root), "--json", timeout=120)
    assert shown.returncode == 0, shown.stderr
    return sorted(line["pod"] for line in json.loads(shown.stdout)["pods"])


REFUSED_DRIVER = """
import sys
import ray
import ray._private.services as services
services.resolve_ip_for_localhost = lambda host: host  # reach the loopback head as it is
try:
    ray.init(address=sys.argv[1], _node_ip_address="127.0.0.1", log_to_driver=False)
except Exception as exc:
    print(type(exc).__name__, exc)
    sys.exit(3)
print("connected")
"""


def test_two_fleets_on_one_machine_each_acts_on_its_own_cluster(
    env: dict[str, str], tmp_path: Path, short_dir: Path
) -> None:
    env = {k: v for k, v in env.items() if not k.startswith("RAY_AUTH")}
    root_a, root_b = short_dir / "a", short_dir / "b"
    ray_a, ray_b = short_dir / "ray-a", short_dir / "ray-b"
    port_a, port_b = free_port(), free_port()
    heads = [LocalNode(temp_dir=d, address="", label="", head=True) for d in (ray_a, ray_b)]
    try:
        for index, (root, ray_dir, port) in enumerate(
            ((root_a, ray_a, port_a), (root_b, ray_b, port_b))
        ):
            up = fleet_up(env, root, ray_dir, port)
            assert up["address"] == f"127.0.0.1:{port}" and up["started_head"] is True
            client_port = up["ray_client_port"]
            assert isinstance(client_port, int) and client_port > 0
            # Its Ray client server is found by its port (it names no temp dir).
            heads[index] = LocalNode(
                temp_dir=ray_dir, address="", label="", head=True, client_port=client_port
            )

        # fleet.json and the Ray token: the owner's only.
        for name in ("fleet.json", "ray-token"):
            assert stat.S_IMODE((root_a / name).stat().st_mode) == 0o600
        record = json.loads((root_a / "fleet.json").read_text())
        assert record["address"] == f"127.0.0.1:{port_a}" and record["started_head"] is True
        assert record["token_path"] == str(root_a / "ray-token")

        # Nothing of fleet A's head listens beyond loopback (GCS, raylet, object manager,
        # agents, client server, workers and the fleet's actors alike).
        found = listeners(heads[0].processes())
        assert any(port == port_a for _, _, port in found)  # the GCS, on loopback
        assert [entry for entry in found if not is_loopback(entry[1])] == []

        # A Ray client with a wrong token is refused by the GCS.
        wrong = {**env, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "not-the-token"}
        refused = subprocess.run(
            [sys.executable, "-c", REFUSED_DRIVER, f"127.0.0.1:{port_a}"],
            env=wrong, capture_output=True, text=True, timeout=240,
        )  # fmt: skip
        assert refused.returncode == 3, refused.stdout + refused.stderr
        assert "Unauthenticated" in refused.stderr or "InvalidAuthToken" in refused.stderr

        # The user's config (a hook, the sandbox forced on) reaches a pod of the fleet, as
        # it would a `pod serve` in that workspace.
        config_file = Path(env["XDG_CONFIG_HOME"]) / "pod" / "config.toml"
        config_file.parent.mkdir(parents=True, exist_ok=True)
        config_file.write_text(USER_CONFIG)
        app = tmp_path / "app"
        app.mkdir()
        add = pod(env, "fleet", "add", str(app), "--name", "app", "--provider", "scripted",
                  "--root", str(root_a), "--json", timeout=120)  # fmt: skip
        assert add.returncode == 0, add.stderr
        row = json.loads(add.stdout)
        assert row["config_files"] == [str(config_file)]
        assert row["config"]["sandbox"]["mode"] == "on"
        socket = row["socket"]
        assert socket.startswith(str(root_a))
        shown = asyncio.run(status_of(socket))
        assert [h["command"] for h in shown["hooks"]] == ["/bin/true"]
        assert [h["event"] for h in shown["hooks"]] == ["PreToolUse"]
        assert asyncio.run(run_through(socket, "hello"))[-1] == "run_end"

        # A person's `add`: a short summary that names the config file and the socket.
        bee = tmp_path / "bee"
        bee.mkdir()
        add = pod(env, "fleet", "add", str(bee), "--name", "bee", "--provider", "scripted",
                  "--sandbox", "off", "--root", str(root_b), timeout=120)  # fmt: skip
        assert add.returncode == 0, add.stderr
        lines = add.stdout.splitlines()
        assert len(lines) <= 8, add.stdout
        assert f"config files: {config_file}" in add.stdout
        assert "sandbox off, hooks 1" in add.stdout  # the command line wins over the file
        (socket,) = [ln.split()[-1] for ln in lines if ln.strip().startswith("socket ")]
        assert socket.startswith(str(root_b)) and lines[-1] == f"next: pod chat --socket {socket}"
        assert asyncio.run(run_through(socket, "hello"))[-1] == "run_end"

        # `up` again with the same root joins its running cluster (no second head), and
        # tells a person where things are in a few lines.
        again = pod(env, "fleet", "up", "--root", str(root_a), "--hosts-per-node", "1",
                    timeout=240)  # fmt: skip
        assert again.returncode == 0, again.stderr
        assert again.stdout.startswith(f"fleet up on Ray cluster 127.0.0.1:{port_a} (")
        assert "loopback only" in again.stdout and len(again.stdout.splitlines()) <= 6
        assert f"next: pod fleet add WORKSPACE --root {root_a}" in again.stdout

        assert pods_of(env, root_a) == ["app"]
        assert pods_of(env, root_b) == ["bee"]
        text = pod(env, "fleet", "status", "--root", str(root_a), timeout=120).stdout
        assert "pod app" in text and "bee" not in text

        # Neither --root nor --address: two clusters run, so it refuses and lists them.
        guess = pod(env, "fleet", "status", timeout=120)
        assert guess.returncode != 0
        # (2 here; more where other people's Ray clusters run on the machine too)
        assert re.search(r"\d+ Ray clusters run on this machine", guess.stderr), guess.stderr
        assert f"127.0.0.1:{port_a}" in guess.stderr and f"127.0.0.1:{port_b}" in guess.stderr
        assert pod(env, "fleet", "down", timeout=120).returncode != 0

        down = pod(env, "fleet", "down", "--root", str(root_a), timeout=240)
        assert down.returncode == 0, down.stderr
        assert f"the Ray head it started ({ray_a.resolve()})" in down.stdout
        assert heads[0].processes() == []
        assert heads[1].processes() != []  # the other fleet's head still runs
        assert not (root_a / "fleet.json").exists() and not (root_a / "ray-token").exists()
        assert pods_of(env, root_b) == ["bee"]
        gone = pod(env, "fleet", "status", "--root", str(root_a), timeout=120)
        assert gone.returncode != 0 and "no fleet under" in gone.stderr

        # --address alone: the token is found where the head's GCS says it is, and `down`
        # finds the fleet's own file through the fleet's settings.
        address_b = f"127.0.0.1:{port_b}"
        by_address = pod(env, "fleet", "status", "--address", address_b, "--json", timeout=120)
        assert by_address.returncode == 0, by_address.stderr
        assert [line["pod"] for line in json.loads(by_address.stdout)["pods"]] == ["bee"]
        down = pod(env, "fleet", "down", "--address", address_b, timeout=240)
        assert down.returncode == 0, down.stderr
        assert "the Ray head it started" in down.stdout
        assert heads[1].processes() == []
        assert not (root_b / "fleet.json").exists() and not (root_b / "ray-token").exists()
    finally:
        for head in heads:
            head.stop(timeout_s=5)
