"""``<root>/fleet.json`` and which cluster a ``pod fleet`` command acts on (pure: no Ray)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.serving.fleet.clusters import (
    RayCluster,
    choose,
    cluster_at,
    is_loopback,
    local_clusters,
    parse_gcs,
)
from orchestrator.serving.fleet.directory import FleetError
from orchestrator.serving.fleet.fleetfile import (
    FleetFile,
    fleet_file,
    new_ray_token,
    read_fleet_file,
    remove_fleet_files,
    write_fleet_file,
)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_fleet_file_is_written_private_and_read_back(tmp_path: Path) -> None:
    root = tmp_path / "fleet"
    record = FleetFile(
        address="127.0.0.1:6390",
        started_head=True,
        ray_dir="/tmp/ray-a",
        ray_client_port=10001,
        token_path=str(root / "ray-token"),
    )
    path = write_fleet_file(root, record)
    assert path == root / "fleet.json" and mode(path) == 0o600
    assert mode(root) == 0o700
    assert read_fleet_file(root) == record
    # Written again (a second `pod fleet up`): replaced whole, still private.
    write_fleet_file(root, record.model_copy(update={"address": "127.0.0.1:6391"}))
    again = read_fleet_file(root)
    assert again is not None and again.address == "127.0.0.1:6391"
    assert mode(path) == 0o600 and sorted(p.name for p in root.iterdir()) == ["fleet.json"]


def test_no_fleet_file_is_none_and_a_broken_one_is_refused_with_its_path(tmp_path: Path) -> None:
    assert read_fleet_file(tmp_path) is None
    fleet_file(tmp_path).write_text('{"address": 5}')
    with pytest.raises(FleetError, match=r"fleet\.json is not a fleet file"):
        read_fleet_file(tmp_path)


def test_a_ray_token_is_private_and_down_forgets_both_files(tmp_path: Path) -> None:
    root = tmp_path / "fleet"
    token = new_ray_token(root)
    assert mode(token) == 0o600 and len(token.read_text()) == 64
    first = token.read_text()
    assert new_ray_token(root).read_text() != first and mode(token) == 0o600
    write_fleet_file(root, FleetFile(address="127.0.0.1:1", started_head=False))
    remove_fleet_files(root)
    assert list(root.iterdir()) == []
    remove_fleet_files(root)  # nothing left: no error


def gcs(port: int, node_ip: str = "127.0.0.1", pid: int = 100) -> RayCluster:
    return RayCluster(
        address=f"{node_ip}:{port}",
        port=port,
        node_ip=node_ip,
        session_dir=f"/tmp/ray-{port}/session_x",
        gcs_pid=pid,
    )


def test_a_gcs_command_line_names_its_cluster_and_its_token() -> None:
    args = [
        "/venv/lib/python3.11/site-packages/ray/core/src/ray/gcs/gcs_server",
        "--log_dir=/tmp/r/session_1/logs",
        "--gcs_server_port=46379",
        "--node-ip-address=127.0.0.1",
        "--session-dir=/tmp/r/session_1",
    ]
    found = parse_gcs(7, args, {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": "/f/tok"})
    assert found == RayCluster(
        address="127.0.0.1:46379",
        port=46379,
        node_ip="127.0.0.1",
        session_dir="/tmp/r/session_1",
        gcs_pid=7,
        auth_mode="token",
        token_path="/f/tok",
    )
    assert found.temp_dir == "/tmp/r"
    assert parse_gcs(8, ["/usr/bin/python", "--gcs_server_port=1"], {}) is None
    assert parse_gcs(9, [args[0], "--node-ip-address=10.0.0.1"], {}) is None  # no port


def test_with_neither_root_nor_address_one_cluster_is_used_and_several_are_refused() -> None:
    assert choose(None, None, [gcs(6379)]).address == "127.0.0.1:6379"
    with pytest.raises(FleetError, match="no Ray cluster runs on this machine"):
        choose(None, None, [])
    with pytest.raises(FleetError) as refused:
        choose(None, None, [gcs(6379, pid=11), gcs(6390, pid=12)])
    message = str(refused.value)
    assert "2 Ray clusters run on this machine" in message and "--root" in message
    assert "127.0.0.1:6379 (temp dir /tmp/ray-6379, GCS pid 11)" in message
    assert "127.0.0.1:6390 (temp dir /tmp/ray-6390, GCS pid 12)" in message


def test_root_names_its_own_cluster_whatever_else_runs(tmp_path: Path) -> None:
    record = FleetFile(address="127.0.0.1:6390", started_head=True, ray_dir="/tmp/b")
    write_fleet_file(tmp_path, record)
    several = [gcs(6379), gcs(6390)]
    target = choose(tmp_path, None, several)
    assert (target.address, target.fleet) == ("127.0.0.1:6390", record)
    # An address given wins, and the fleet file still comes along (down reads it).
    assert choose(tmp_path, "10.0.0.5:6379", several).address == "10.0.0.5:6379"
    assert choose(None, "10.0.0.5:6379", several).fleet is None
    with pytest.raises(FleetError, match=r"no fleet under .*pod fleet up --root"):
        choose(tmp_path / "elsewhere", None, several)


def test_an_address_finds_its_cluster_by_port_and_host() -> None:
    clusters = [gcs(6379, node_ip="192.0.2.2"), gcs(6390)]
    assert cluster_at("127.0.0.1:6390", clusters) == clusters[1]
    assert cluster_at("192.0.2.2:6379", clusters) == clusters[0]
    assert cluster_at("localhost:6379", clusters) == clusters[0]  # it listens everywhere
    assert cluster_at("192.0.2.9:6379", clusters) is None  # another machine's
    assert cluster_at("127.0.0.1:7000", clusters) is None
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("192.0.2.2") and not is_loopback("example.org")


def test_the_machine_s_clusters_are_found_by_their_gcs_process(tmp_path: Path) -> None:
    # A process named gcs_server with a GCS's flags and environment, as Ray starts it (it
    # does nothing but sleep): found with its port, address, session dir and token path.
    fake = tmp_path / "gcs_server"
    os.symlink(sys.executable, fake)
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": "/x/ray-token"}
    code = "import sys, time; sys.stdout.write('up\\n'); sys.stdout.flush(); time.sleep(60)"
    args = [str(fake), "-c", code, "--gcs_server_port=47123", "--node-ip-address=127.0.0.1"]
    args.append(f"--session-dir={tmp_path}/session_1")
    process = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline() == "up\n"
        mine = [c for c in local_clusters() if c.gcs_pid == process.pid]
        assert [(c.address, c.temp_dir, c.auth_mode, c.token_path) for c in mine] == [
            ("127.0.0.1:47123", str(tmp_path), "token", "/x/ray-token")
        ]
    finally:
        process.kill()
        process.wait()
    assert not [c for c in local_clusters() if c.gcs_pid == process.pid]


def test_answers_says_whether_something_listens_at_an_address() -> None:
    pytest.importorskip("ray")
    import socket

    from orchestrator.serving.fleet.driver import answers

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert answers(f"127.0.0.1:{port}") is None
    assert answers(f"127.0.0.1:{port}") == "Connection refused"
    assert answers("127.0.0.1:port") == "not host:port"
