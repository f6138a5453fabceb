"""Which Ray cluster a ``pod fleet`` command acts on.

Ray's own ``address="auto"`` takes whichever cluster it finds first on the machine: with two
fleets on one machine, ``pod fleet down`` stopped the other fleet's head. So a command acts on
the cluster its ``--address`` names, else on the one its ``--root``'s ``fleet.json`` names,
else on the only Ray cluster of the machine; with several it refuses and lists them.

The machine's clusters are found by their GCS processes (``gcs_server``, one per cluster with
a head here): the command line names the GCS port, the node's address and the session dir,
and its environment says whether Ray's token authentication is on. Pure: no Ray here.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path

from orchestrator.serving.fleet.directory import FleetError
from orchestrator.serving.fleet.fleetfile import FleetFile, fleet_file, read_fleet_file
from orchestrator.serving.fleet.local import process_table


@dataclass(frozen=True)
class RayCluster:
    """A Ray cluster whose head (its GCS) runs on this machine."""

    address: str
    """``node_ip:port``, the address other nodes and drivers use."""
    port: int
    node_ip: str
    session_dir: str
    gcs_pid: int
    auth_mode: str = ""
    """``RAY_AUTH_MODE`` in the GCS's environment ("" when unset)."""
    token_path: str | None = None
    """``RAY_AUTH_TOKEN_PATH`` in the GCS's environment."""

    @property
    def temp_dir(self) -> str:
        """The ``--temp-dir`` it was started with (the session dir's parent)."""
        return str(Path(self.session_dir).parent)

    def describe(self) -> str:
        """One line naming it for a person."""
        return f"{self.address} (temp dir {self.temp_dir}, GCS pid {self.gcs_pid})"


def _flag(args: list[str], *names: str) -> str | None:
    """The value of ``--name=value`` for the first of ``names`` present (Ray's binaries mix
    ``_`` and ``-`` in their flag names)."""
    for arg in args:
        for name in names:
            if arg.startswith(f"--{name}="):
                return arg.split("=", 1)[1]
    return None


def parse_gcs(pid: int, args: list[str], environ: dict[str, str]) -> RayCluster | None:
    """The cluster a process is the GCS of, from its command line and environment; None
    when it is not a Ray GCS."""
    if not args or Path(args[0]).name != "gcs_server":
        return None
    port = _flag(args, "gcs_server_port", "gcs-server-port")
    node_ip = _flag(args, "node-ip-address", "node_ip_address")
    if port is None or not port.isdigit() or node_ip is None:
        return None
    host = f"[{node_ip}]" if ":" in node_ip else node_ip
    return RayCluster(
        address=f"{host}:{port}",
        port=int(port),
        node_ip=node_ip,
        session_dir=_flag(args, "session-dir", "session_dir") or "",
        gcs_pid=pid,
        auth_mode=environ.get("RAY_AUTH_MODE", ""),
        token_path=environ.get("RAY_AUTH_TOKEN_PATH"),
    )


def _environ(pid: int) -> dict[str, str]:
    """A process's environment (empty when it cannot be read: another user's)."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {key.decode(errors="replace"): value.decode(errors="replace") for key, value in pairs}


def local_clusters() -> list[RayCluster]:
    """Every Ray cluster with its head on this machine now, by GCS port."""
    found: list[RayCluster] = []
    for pid, (_, line) in process_table().items():
        if "gcs_server" not in line:
            continue  # read again, with its arguments apart, only for a GCS
        args = Path(f"/proc/{pid}/cmdline")
        try:
            argv = [a.decode(errors="replace") for a in args.read_bytes().split(b"\0") if a]
        except OSError:
            continue  # it ended meanwhile
        cluster = parse_gcs(pid, argv, _environ(pid))
        if cluster is not None:
            found.append(cluster)
    return sorted(found, key=lambda cluster: cluster.port)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an IP address or ``localhost``) is this machine's loopback."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def split_address(address: str) -> tuple[str, int | None]:
    """``host:port`` → (host, port); the port None when it is missing or not a number."""
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port) if port.isdigit() else None


def cluster_at(address: str, clusters: list[RayCluster]) -> RayCluster | None:
    """The machine's cluster ``address`` reaches: same port, and the same node address or a
    loopback one (a GCS listening on every interface answers on loopback too)."""
    host, port = split_address(address)
    for cluster in clusters:
        if cluster.port == port and (host == cluster.node_ip or is_loopback(host)):
            return cluster
    return None


@dataclass(frozen=True)
class Target:
    """The cluster a command acts on, and the fleet file that named it (if one did)."""

    address: str
    fleet: FleetFile | None = None


def choose(root: Path | None, address: str | None, clusters: list[RayCluster]) -> Target:
    """The cluster a ``pod fleet`` command acts on: ``address`` if given, else the one
    ``<root>/fleet.json`` names, else the machine's only cluster. :class:`FleetError` when
    ``root`` has no fleet, or when neither is given and the machine has no cluster or several
    (the message lists them)."""
    fleet = read_fleet_file(root) if root is not None else None
    if address is not None:
        return Target(address=address, fleet=fleet)
    if root is not None:
        if fleet is None:
            raise FleetError(
                f"no fleet under {root} ({fleet_file(root)} is missing): start one with "
                f"`pod fleet up --root {root}`, or name its cluster with --address"
            )
        return Target(address=fleet.address, fleet=fleet)
    if not clusters:
        raise FleetError(
            "no Ray cluster runs on this machine: start a fleet with `pod fleet up --root DIR`, "
            "or name a cluster elsewhere with --address HOST:PORT"
        )
    if len(clusters) > 1:
        listed = "".join(f"\n  {cluster.describe()}" for cluster in clusters)
        raise FleetError(
            f"{len(clusters)} Ray clusters run on this machine; say which with --root (the "
            f"fleet's directory) or --address:{listed}"
        )
    return Target(address=clusters[0].address)


__all__ = [
    "RayCluster",
    "Target",
    "choose",
    "cluster_at",
    "is_loopback",
    "local_clusters",
    "parse_gcs",
    "split_address",
]
