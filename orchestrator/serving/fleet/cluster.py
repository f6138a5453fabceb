"""Starting, reporting and stopping a fleet on a Ray cluster (what ``pod fleet`` runs).

``deploy`` puts a few ``PodHost`` actors on every live node (detached, named, restarted
forever; soft node affinity, so a host of a lost node comes back on another one) and one
gateway per node (strict affinity: a gateway belongs to its node's clients).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
from pathlib import Path
from typing import Any

import ray
from pydantic import BaseModel
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from orchestrator.protocol.filling import to_data
from orchestrator.serving.fleet.directory import (
    NAMESPACE,
    Directory,
    FleetError,
    FleetSettings,
    HostInfo,
    Placement,
)
from orchestrator.serving.fleet.gateway import Gateway, gateway_dir
from orchestrator.serving.fleet.host_actor import PodHost
from orchestrator.serving.fleet.local import LocalNode, start_node
from orchestrator.serving.fleet.placing import place_host
from orchestrator.serving.fleet.raykv import RayKV

ACTOR_CALL_TIMEOUT_S = 10.0
START_RETRY_S = 1.0
"""Between a restarted gateway's tries to bind its sockets."""

log = logging.getLogger(__name__)


class GatewayActor:
    """A :class:`Gateway` as a Ray actor on its node."""

    def __init__(self, node: str, tcp_port: int) -> None:
        self.gateway = Gateway(node, tcp_port=tcp_port)
        # Bound by itself, not only by `pod fleet up`: Ray runs this again when it restarts
        # the actor (its process died), and nobody else would bind the sockets then. Ray runs
        # an async actor's constructor on the loop its methods run on, so the start is a task
        # of that loop. Not a call to itself: one made while Ray still has the actor as
        # restarting fails ("the actor is restarting") and is never run, which left a gateway
        # deaf after its restart on a loaded machine.
        self._binding = asyncio.get_running_loop().create_task(self._start_until_bound())

    async def _start_until_bound(self) -> None:
        """Bind its sockets, trying again every second until that works: nobody waits on this
        task, so a failed start (the GCS still unreachable after the node's loss) would leave
        a restarted gateway deaf for good."""
        while True:
            try:
                await self.gateway.start()
                return
            except Exception:
                log.warning("the gateway could not bind its sockets; trying again", exc_info=True)
                await asyncio.sleep(START_RETRY_S)

    async def pid(self) -> int:
        """Its process (tests kill it to see it come back)."""
        return os.getpid()

    async def start(self) -> dict[str, Any]:
        """Bind its sockets (again after a restart; idempotent)."""
        return await self.gateway.start()

    async def stop(self) -> None:
        """Stop listening (and trying to bind, if it still does)."""
        self._binding.cancel()
        await self.gateway.stop()


def start_local(*, num_cpus: int = 1, object_store_mb: int = 80) -> None:
    """A one-node Ray cluster owned by this process (tests, benches); ``ray.shutdown()``
    ends it. :class:`FleetError` when Ray cannot start here."""
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    try:
        ray.init(
            # "local": a cluster of its own, always. With no address, Ray joins the cluster a
            # `ray start` on this machine last wrote to /tmp/ray (another test's, a fleet's).
            address="local",
            num_cpus=num_cpus,
            namespace=NAMESPACE,
            include_dashboard=False,
            object_store_memory=object_store_mb * 1024 * 1024,
            log_to_driver=False,
        )
    except Exception as exc:  # shared memory, ports, a sandbox: Ray says which
        raise FleetError(f"a local Ray cluster cannot start here: {exc}") from None


def start_head(
    temp_dir: Path,
    *,
    token_path: Path,
    num_cpus: int = 1,
    port: int | None = None,
    listen: str | None = None,
) -> LocalNode:
    """A Ray head on this machine for a fleet (``pod fleet up``), with a temp dir of its own
    (so ``pod fleet down`` stops it alone), its GCS on ``port`` (default: a free one), Ray's
    token authentication on with the token in ``token_path``, and every listener on
    loopback unless ``listen`` names the address other machines reach it at."""
    return start_node(
        temp_dir,
        label="pod_fleet_head",
        num_cpus=num_cpus,
        object_store_mb=None,
        port=port,
        node_ip=listen or "127.0.0.1",
        env={"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token_path)},
    )


def live_nodes() -> list[str]:
    """The ids of the cluster's live nodes."""
    nodes: list[dict[str, Any]] = ray.nodes()  # type: ignore[no-untyped-call]
    return [node["NodeID"] for node in nodes if node.get("Alive")]


def live_machines() -> list[str]:
    """The machines (host names) with a live node."""
    nodes: list[dict[str, Any]] = ray.nodes()  # type: ignore[no-untyped-call]
    return sorted({str(node.get("NodeManagerHostname")) for node in nodes if node.get("Alive")})


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
    shared: list[Path] | None = None,
    head: LocalNode | None = None,
) -> dict[str, Any]:
    """Start the fleet's actors on every live node not serving yet (idempotent: ``pod fleet
    up`` again after a node joined adds that node's); what each gateway bound. ``shared``:
    further directories every node sees (added to those of a fleet that runs already);
    ``head``: the Ray head started for the fleet (``pod fleet down`` stops it)."""
    directory = Directory(RayKV())
    more = [str(path) for path in shared or []]
    try:
        settings = directory.settings()
        known = settings.shared + [path for path in more if path not in settings.shared]
        if known != settings.shared:
            settings = settings.model_copy(update={"shared": known})
            directory.save_settings(settings)
    except FleetError:
        settings = FleetSettings(
            root=str(root),
            token=secrets.token_urlsafe(24),
            tcp_port=tcp_port,
            shared=more,
            ray_dir=str(head.temp_dir) if head is not None else None,
            ray_client_port=head.client_port if head is not None else 0,
        )
        directory.save_settings(settings)
    Path(settings.root).mkdir(parents=True, exist_ok=True, mode=0o700)
    host_class = ray.remote(PodHost)
    gateway_class = ray.remote(GatewayActor)
    gateways: dict[str, Any] = {}
    for index, node in enumerate(live_nodes()):
        for number in range(hosts_per_node):
            name = host_name(node, number)
            info: dict[str, Any]
            try:  # a host of an earlier `up` stays wherever it is (Ray may have moved it)
                existing: Any = ray.get_actor(name, namespace=NAMESPACE)
                info = ray.get(existing.info.remote(), timeout=60)
            except ValueError:
                info = place_host(host_class, name, node, (idle_unload_s, max_loaded))
            directory.add_host(HostInfo(name=name, node=info["node"], machine=info["machine"]))
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
    ``unavailable`` (its host does not answer, or its machine has no live node)."""
    pinned_machine: str | None = None
    """The machine it must run on (its workspace is not on shared storage), or None."""
    why: str = ""
    """Why it is unavailable, when it is."""


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
    machines = live_machines()
    return FleetStatus(
        nodes=live_nodes(),
        hosts=hosts,
        pods=[_line(p, rows.get(p.pod), infos, machines) for p in directory.placements()],
    )


def _line(
    placement: Placement,
    row: dict[str, Any] | None,
    infos: dict[str, dict[str, Any]],
    live_machines: list[str],
) -> PodLine:
    """How ``pod fleet status`` shows a pod: what its host says, else what the directory and
    the cluster's live machines say."""
    line = to_data(PodLine, placement)
    why = placement.unavailable(live_machines)
    if why is not None:
        return line.model_copy(update={"state": "unavailable", "why": why})
    if placement.host is None:
        return line
    if row is not None and row.get("host") == placement.host:
        node = infos[placement.host].get("node")
        return line.model_copy(
            update={"loaded": row["loaded"], "state": row["state"], "node": node}
        )
    if not infos.get(placement.host):
        why = f"its host {placement.host} does not answer (restarting, or its node is down)"
        return line.model_copy(update={"state": "unavailable", "why": why})
    return line.model_copy(update={"state": "unloaded"})


def teardown(*, timeout: float = ACTOR_CALL_TIMEOUT_S) -> FleetSettings | None:
    """Unload every pod to its session, stop every host and gateway, forget the fleet; the
    fleet's settings as they were (None when the cluster had no fleet), which name the Ray
    head ``pod fleet up`` started, if it did."""
    directory = Directory(RayKV())
    try:
        settings: FleetSettings | None = directory.settings()
    except FleetError:
        settings = None
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
    return settings


def head_of(ray_dir: str, client_port: int) -> LocalNode:
    """The Ray head ``pod fleet up`` started in ``ray_dir`` (to stop it by its processes)."""
    return LocalNode(
        temp_dir=Path(ray_dir), address="", label="", head=True, client_port=client_port
    )


__all__ = [
    "FleetStatus",
    "GatewayActor",
    "HostRow",
    "PodLine",
    "deploy",
    "gateway_dir",
    "head_of",
    "host_name",
    "live_machines",
    "live_nodes",
    "start_head",
    "start_local",
    "status",
    "teardown",
]
