"""Putting a host actor on its node (``deploy``): soft affinity, so Ray restarts it
elsewhere when its node dies, yet on its own node at creation."""

from __future__ import annotations

import time
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from orchestrator.serving.fleet.directory import NAMESPACE, FleetError

PLACE_TRIES = 5
"""How many times a host Ray placed on another node is made again before ``up`` gives up."""


def _until_it_runs_work(node: str, timeout_s: float = 120.0) -> None:
    """Wait until ``node`` has run a task there (hard affinity): until then the scheduler may
    take a node that just joined, or still starts its workers, for unable to run anything,
    and a soft affinity to it lands on another node."""

    @ray.remote(num_cpus=0)
    def here() -> str:
        return str(ray.get_runtime_context().get_node_id())

    strategy = NodeAffinitySchedulingStrategy(node, soft=False)
    ray.get(here.options(scheduling_strategy=strategy).remote(), timeout=timeout_s)


def place_host(
    host_class: Any, name: str, node: str, settings: tuple[float, int | None]
) -> dict[str, Any]:
    """Make the host actor ``name`` on ``node``; its ``info``. Its affinity is soft, so that
    when the node dies Ray starts it again on another one; but soft affinity alone put all
    of a 2-node cluster's hosts on one node on most deployments (one node's death then took
    every host). So it is placed on its node at creation: made only once the node runs work,
    and made again when Ray put it elsewhere all the same. :class:`FleetError` after
    :data:`PLACE_TRIES` tries."""
    idle_unload_s, max_loaded = settings
    landed = ""
    for _ in range(PLACE_TRIES):
        _until_it_runs_work(node)
        host: Any = host_class.options(
            name=name,
            namespace=NAMESPACE,
            lifetime="detached",
            get_if_exists=True,
            max_restarts=-1,
            max_task_retries=-1,
            max_concurrency=1000,
            num_cpus=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=True),
        ).remote(name, idle_unload_s=idle_unload_s, max_loaded=max_loaded)
        info: dict[str, Any] = ray.get(host.info.remote(), timeout=60)
        if info["node"] == node:
            return info
        landed = info["node"]
        ray.kill(host, no_restart=True)
        _until_gone(name)
    raise FleetError(
        f"Ray placed host {name} on node {landed[:8]} instead of {node[:8]}, {PLACE_TRIES} "
        "times; run `pod fleet up` again once the node has settled"
    )


def _until_gone(name: str, timeout_s: float = 60.0) -> None:
    """Wait until no actor answers to ``name`` (a killed actor's name is freed once the GCS
    has it dead)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            ray.get_actor(name, namespace=NAMESPACE)
        except ValueError:
            return
        time.sleep(0.1)
    raise FleetError(f"the misplaced host {name} did not go away within {timeout_s:.0f} s")


__all__ = ["PLACE_TRIES", "place_host"]
