"""The fleet's hosts are spread over the nodes as documented: on a real 2-node Ray cluster of
this machine, deployed right after the second node joined (when soft affinity alone put
every host on one node), 2 hosts per node land 2 and 2. Skipped where Ray is not installed
or two nodes cannot start."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="the fleet extra (Ray) is not installed")

from orchestrator.serving.fleet.cluster import deploy, live_nodes, status, teardown  # noqa: E402
from orchestrator.serving.fleet.directory import NAMESPACE, Directory, FleetError  # noqa: E402
from orchestrator.serving.fleet.driver import use_ray_token  # noqa: E402
from orchestrator.serving.fleet.local import LocalNode, node_id, start_node  # noqa: E402
from orchestrator.serving.fleet.raykv import RayKV  # noqa: E402

# One worker runs every Ray test, one after the other (see test_fleet_ray.py).
pytestmark = [pytest.mark.fleet, pytest.mark.slow, pytest.mark.xdist_group("ray")]


def test_four_hosts_on_two_nodes_land_two_on_each(
    short_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "RAY_AUTH_MODE", "disabled"
    )  # test nodes: see orchestrator/serving/fleet/local.py
    nodes: list[LocalNode] = []
    try:
        try:
            nodes.append(start_node(short_dir / "a", label="spread_a"))
            nodes.append(start_node(short_dir / "b", label="spread_b", address=nodes[0].address))
        except FleetError as exc:
            pytest.skip(str(exc))
        use_ray_token(None, None)
        ray.init(address=nodes[0].address, namespace=NAMESPACE, log_to_driver=False)
        deadline = time.monotonic() + 120  # a ceiling for a loaded machine, not a timing
        while len(live_nodes()) < 2:
            assert time.monotonic() < deadline, "the second node never joined"
            time.sleep(0.2)
        node_a, node_b = node_id("spread_a"), node_id("spread_b")

        deploy(short_dir / "fleet", hosts_per_node=2)

        placed = Counter(host.node for host in Directory(RayKV()).hosts())
        assert placed == {node_a: 2, node_b: 2}
        # Where the actors run now, as they say themselves (not only what was recorded).
        running = Counter(host.node for host in status().hosts)
        assert running == {node_a: 2, node_b: 2}
        teardown()
    finally:
        ray.shutdown()
        for node in reversed(nodes):
            node.stop(timeout_s=5)
