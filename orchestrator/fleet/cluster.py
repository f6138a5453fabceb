"""Starting, reporting and stopping a fleet on a Ray cluster (what ``pod fleet`` runs).

``deploy`` puts a few ``PodHost`` actors on every live node (detached, named, restarted
forever; soft node affinity, so a host of a lost node comes back on another one) and one
gateway per node (strict affinity: a gateway belongs to its node's clients).
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import subprocess
from pathlib import Path
from typing import Any

import ray
from pydantic import BaseModel
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from orchestrator.fleet.directory import (
    NAMESPACE,
    Directory,
    FleetError,
    FleetSettings,
    HostInfo,
    Placement,
)
from orchestrator.fleet.gateway import Gateway, gateway_dir
from orchestrator.fleet.host_actor import PodHost
from orchestrator.fleet.raykv import RayKV

ACTOR_CALL_TIMEOUT_S = 10.0


class GatewayActor:
    """A :class:`Gateway` as a Ray actor on its node."""

    def __init__(self, node: str, tcp_port: int) -> None:
        self.gateway = Gateway(node, tcp_port=tcp_port)

    async def start(self) -> dict[str, Any]:
        """Bind its sockets (again after a restart; idempotent)."""
        return await self.gateway.start()

    async def stop(self) -> None:
        """Stop listening."""
        await self.gateway.stop()


def connect(address: str = "auto") -> None:
    """Join the Ray cluster at ``address`` as a driver (once per process)."""
    if not ray.is_initialized():
        ray.init(
            address=address, namespace=NAMESPACE, log_to_driver=False, logging_level=logging.WARNING
        )


def start_local(*, num_cpus: int = 1, object_store_mb: int = 80) -> None:
    """A one-node Ray cluster owned by this process (tests, benches); ``ray.shutdown()``
    ends it. :class:`FleetError` when Ray cannot start here."""
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    try:
        ray.init(
            num_cpus=num_cpus,
            namespace=NAMESPACE,
            include_dashboard=False,
            object_store_memory=object_store_mb * 1024 * 1024,
            log_to_driver=False,
        )
    except Exception as exc:  # shared memory, ports, a sandbox: Ray says which
        raise FleetError(f"a local Ray cluster cannot start here: {exc}") from None


def start_head(temp_dir: Path, *, num_cpus: int = 1, port: int = 6379) -> str:
    """``ray start --head`` on this machine; the address other nodes join with."""
    env = {**os.environ, "RAY_AUTH_MODE": os.environ.get("RAY_AUTH_MODE", "disabled")}
    command = [
        "ray", "start", "--head", f"--port={port}", f"--num-cpus={num_cpus}",
        f"--temp-dir={temp_dir}", "--include-dashboard=false", "--disable-usage-stats",
    ]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise FleetError(f"ray start --head failed: {done.stderr.strip()[-500:]}")
    return f"127.0.0.1:{port}"


def live_nodes() -> list[str]:
    """The ids of the cluster's live nodes."""
    nodes: list[dict[str, Any]] = ray.nodes()  # type: ignore[no-untyped-call]
    return [node["NodeID"] for node in nodes if node.get("Alive")]


def host_name(node: str, index: int) -> str:
    """A host actor's name: its first node and its number there."""
    return f"pod-host-{node[:8]}-{index}"


def deploy(
    root: Path,
    *,
    hosts_per_node: int = 2,
    tcp_port: int = 0,
    idle_unload_s: float = 600.0,
    max_loaded: int | None = None,
) -> dict[str, Any]:
    """Start the fleet's actors on every live node not serving yet (idempotent: ``pod fleet
    up`` again after a node joined adds that node's); what each gateway bound."""
    directory = Directory(RayKV())
    try:
        settings = directory.settings()
    except FleetError:
        settings = FleetSettings(root=str(root), token=secrets.token_urlsafe(24), tcp_port=tcp_port)
        directory.save_settings(settings)
    Path(settings.root).mkdir(parents=True, exist_ok=True, mode=0o700)
    host_class = ray.remote(PodHost)
    gateway_class = ray.remote(GatewayActor)
    gateways: dict[str, Any] = {}
    for index, node in enumerate(live_nodes()):
        for number in range(hosts_per_node):
            name = host_name(node, number)
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
            # Where it runs, not where it was asked to: soft affinity may place it elsewhere
            # (a node still starting its workers), and status must say where it is.
            info = ray.get(host.info.remote(), timeout=60)
            directory.add_host(HostInfo(name=name, node=info["node"]))
        port = settings.tcp_port + index if settings.tcp_port else 0
        gateway: Any = gateway_class.options(
            name=f"pod-gateway-{node[:8]}",
            namespace=NAMESPACE,
            lifetime="detached",
            get_if_exists=True,
            max_restarts=-1,
            max_concurrency=1000,
            num_cpus=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
        ).remote(node, port)
        gateways[node] = ray.get(gateway.start.remote(), timeout=60)
    return {"root": settings.root, "gateways": gateways}


class HostRow(BaseModel):
    """One host actor as ``pod fleet status`` shows it."""

    name: str
    node: str | None = None
    """The node it runs on now (None: it does not answer: restarting, or its node is down)."""
    pid: int | None = None
    pods: int = 0


class PodLine(BaseModel):
    """One pod as ``pod fleet status`` shows it."""

    pod: str
    host: str | None
    node: str | None
    epoch: int
    loaded: bool = False
    state: str = "unplaced"
    """The pod's machine state, ``unloaded``, ``unplaced`` (no host took it yet), or
    ``unavailable`` (its host does not answer)."""


class FleetStatus(BaseModel):
    """Hosts, pods, and where each pod lives (``pod fleet status``)."""

    nodes: list[str]
    hosts: list[HostRow]
    pods: list[PodLine]


def status(timeout: float = ACTOR_CALL_TIMEOUT_S) -> FleetStatus:
    """Ask every host what it owns; the directory says where the others were placed."""
    directory = Directory(RayKV())
    infos: dict[str, dict[str, Any]] = {}
    for host in directory.hosts():
        try:
            actor: Any = ray.get_actor(host.name, namespace=NAMESPACE)
            infos[host.name] = ray.get(actor.info.remote(), timeout=timeout)
        except (ValueError, ray.exceptions.RayError, TimeoutError):
            infos[host.name] = {}
    hosts = [
        HostRow(
            name=name, node=info.get("node"), pid=info.get("pid"), pods=len(info.get("pods", []))
        )
        for name, info in infos.items()
    ]
    rows = {row["name"]: row for info in infos.values() for row in info.get("pods", [])}
    return FleetStatus(
        nodes=live_nodes(),
        hosts=hosts,
        pods=[_line(p, rows.get(p.pod), infos) for p in directory.placements()],
    )


def _line(
    placement: Placement, row: dict[str, Any] | None, infos: dict[str, dict[str, Any]]
) -> PodLine:
    line = PodLine(
        pod=placement.pod, host=placement.host, node=placement.node, epoch=placement.epoch
    )
    if placement.host is None:
        return line
    if row is not None and row.get("host") == placement.host:
        node = infos[placement.host].get("node")
        return line.model_copy(
            update={"loaded": row["loaded"], "state": row["state"], "node": node}
        )
    if not infos.get(placement.host):
        return line.model_copy(update={"state": "unavailable"})
    return line.model_copy(update={"state": "unloaded"})


def teardown(*, timeout: float = ACTOR_CALL_TIMEOUT_S) -> None:
    """Unload every pod to its session, stop every host and gateway, forget the fleet."""
    directory = Directory(RayKV())
    names = [h.name for h in directory.hosts()]
    names += [f"pod-gateway-{node[:8]}" for node in {h.node for h in directory.hosts()}]
    for name in names:
        try:
            actor = ray.get_actor(name, namespace=NAMESPACE)
        except ValueError:
            continue
        # Killed below either way: its pods come back from their sessions.
        with contextlib.suppress(ray.exceptions.RayError, TimeoutError):
            ray.get(actor.stop.remote(), timeout=timeout)
        ray.kill(actor, no_restart=True)
    directory.clear()


__all__ = [
    "FleetStatus",
    "GatewayActor",
    "HostRow",
    "PodLine",
    "connect",
    "deploy",
    "gateway_dir",
    "host_name",
    "live_nodes",
    "start_head",
    "start_local",
    "status",
    "teardown",
]
