"""``pod fleet`` commands given a ``--root`` whose cluster is missing or gone: they say so
at once, and ``down`` forgets a fleet whose cluster no longer answers. No Ray cluster is
started (Ray must be installed: the commands import it)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="the fleet extra (Ray) is not installed")

from orchestrator.serving.fleet.fleetfile import (
    FleetFile,
    new_ray_token,
    read_fleet_file,
    write_fleet_file,
)
from orchestrator.serving.fleet.local import free_port
from tests.cli.helpers import pod


def test_a_root_without_a_fleet_is_named_in_the_refusal(
    env: dict[str, str], tmp_path: Path
) -> None:
    for command in ("status", "down", "add"):
        args = ["fleet", command, "--root", str(tmp_path / "none")]
        done = pod(env, *args, *([str(tmp_path)] if command == "add" else []), timeout=120)
        assert done.returncode != 0
        assert f"no fleet under {tmp_path / 'none'}" in done.stderr, done.stderr


def test_down_forgets_a_fleet_whose_cluster_is_gone(env: dict[str, str], tmp_path: Path) -> None:
    root = tmp_path / "fleet"
    gone = f"127.0.0.1:{free_port()}"  # nothing listens there
    token = new_ray_token(root)
    write_fleet_file(
        root,
        FleetFile(
            address=gone, started_head=True, ray_dir=str(tmp_path / "ray"), token_path=str(token)
        ),
    )
    shown = pod(env, "fleet", "status", "--root", str(root), timeout=120)
    assert shown.returncode != 0 and f"no Ray cluster answers at {gone}" in shown.stderr
    down = pod(env, "fleet", "down", "--root", str(root), timeout=120)
    assert down.returncode == 0, down.stderr
    assert f"fleet forgotten: its Ray cluster {gone} no longer answers" in down.stdout
    assert not (root / "fleet.json").exists() and not token.exists()


def test_up_will_not_point_a_running_fleet_s_root_at_another_cluster(
    env: dict[str, str], tmp_path: Path
) -> None:
    root = tmp_path / "fleet"
    with socket.socket() as listening:  # something answers where the fleet's cluster is
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        running = f"127.0.0.1:{listening.getsockname()[1]}"
        write_fleet_file(root, FleetFile(address=running, started_head=True, ray_dir="/x"))
        elsewhere = f"127.0.0.1:{free_port()}"
        up = pod(env, "fleet", "up", "--root", str(root), "--address", elsewhere, timeout=120)
    assert up.returncode != 0
    assert f"is the fleet of the Ray cluster {running}, which runs" in up.stderr, up.stderr
    kept = read_fleet_file(root)
    assert kept is not None and (kept.address, kept.started_head) == (running, True)


def test_listen_refuses_a_loopback_address(env: dict[str, str], tmp_path: Path) -> None:
    for address in ("127.0.0.2", "localhost", "::1"):
        up = pod(env, "fleet", "up", "--root", str(tmp_path), "--listen", address, timeout=120)
        assert up.returncode != 0
        assert f"--listen {address}: a head listens on 127.0.0.1 only" in up.stderr, up.stderr
    assert not (tmp_path / "fleet.json").exists()
