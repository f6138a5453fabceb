"""What the fleet keeps in its consistent store: each pod's ownership epoch, where each pod
lives, and the fleet's hosts. Pure: the store is any :class:`KV` (Ray's internal KV in a
cluster, :class:`MemoryKV` in tests), so none of this needs Ray to be tested.

Placement is a **directory**, not consistent hashing alone: ``pod/<name>`` names the host
that owns the pod and the epoch it holds, so ``pod fleet status`` says where each pod is (not
where a hash says it should be), and a pod stays on its host while hosts come and go. A pod
the directory does not place yet goes to the host that rendezvous hashing picks among the
fleet's hosts (:func:`choose_host`): spread evenly, and the same answer from every gateway.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, Field

from orchestrator.errors import PodRuntimeError

NAMESPACE = "pod-fleet"
"""The Ray namespace of the fleet's actors and the KV namespace of its keys."""


class FleetError(PodRuntimeError):
    """The fleet cannot do what was asked; the message says why and what to do."""


class KV(Protocol):
    """A consistent key-value store with an atomic put-if-absent (Ray's internal KV)."""

    def get(self, key: str) -> bytes | None:
        """The value, or None."""
        ...

    def put(self, key: str, value: bytes, *, overwrite: bool = True) -> bool:
        """Store the value (only if absent, unless ``overwrite``); True when the key existed
        before (so a put-if-absent that returns True stored nothing)."""
        ...

    def exists(self, key: str) -> bool:
        """Whether the key is set."""
        ...

    def keys(self, prefix: str) -> list[str]:
        """Every key that starts with ``prefix``."""
        ...

    def delete(self, key: str) -> None:
        """Remove the key (nothing when absent)."""
        ...


@dataclass
class MemoryKV:
    """A :class:`KV` in one process's memory (tests, and a fleet of one process)."""

    data: dict[str, bytes] = field(default_factory=dict)

    def get(self, key: str) -> bytes | None:
        """The value, or None."""
        return self.data.get(key)

    def put(self, key: str, value: bytes, *, overwrite: bool = True) -> bool:
        """Store the value; True when the key existed before."""
        existed = key in self.data
        if overwrite or not existed:
            self.data[key] = value
        return existed

    def exists(self, key: str) -> bool:
        """Whether the key is set."""
        return key in self.data

    def keys(self, prefix: str) -> list[str]:
        """Every key that starts with ``prefix``."""
        return [key for key in self.data if key.startswith(prefix)]

    def delete(self, key: str) -> None:
        """Remove the key."""
        self.data.pop(key, None)


class Epochs:
    """Ownership epochs of pods in a :class:`KV`: an ``orchestrator.adapters.session.EpochStore``.

    Taking epoch ``n`` is a put-if-absent of ``epoch/<pod>/<n>``, so two hosts that race for a
    pod never both get the same epoch. A holder of ``n`` is current while ``epoch/<pod>/<n+1>``
    is absent: one ``exists`` per check, however many takeovers the pod has seen.
    """

    def __init__(self, kv: KV) -> None:
        self.kv = kv
        self._known: dict[str, int] = {}
        """The highest epoch this process has seen per pod (probing starts there)."""

    def _key(self, pod: str, epoch: int) -> str:
        return f"epoch/{pod}/{epoch}"

    def current(self, pod: str) -> int:
        """The pod's epoch now (0: never owned)."""
        epoch = self._known.get(pod)
        if epoch is None:
            hint = self.kv.get(f"epoch/{pod}")
            epoch = int(hint) if hint else 0
        while self.kv.exists(self._key(pod, epoch + 1)):
            epoch += 1
        self._known[pod] = epoch
        return epoch

    def take(self, pod: str, *, host: str) -> int:
        """Take the next epoch of the pod for ``host``; every holder of an older one is
        fenced from now on."""
        epoch = self.current(pod) + 1
        while self.kv.put(self._key(pod, epoch), host.encode(), overwrite=False):
            epoch += 1  # another host took that one first
        self._known[pod] = epoch
        # Only a hint where probing starts; a stale one costs a few more probes, nothing else.
        self.kv.put(f"epoch/{pod}", str(epoch).encode())
        return epoch

    def forget(self, pod: str) -> None:
        """Remove every epoch of a pod that was shut down for good."""
        for key in self.kv.keys(f"epoch/{pod}/"):
            self.kv.delete(key)
        self.kv.delete(f"epoch/{pod}")
        self._known.pop(pod, None)


class Placement(BaseModel):
    """Where one pod of the fleet lives (``pod/<name>``)."""

    pod: str
    config: dict[str, Any]
    """Its whole ``PodConfig`` as JSON, with ``session`` on the fleet's shared storage."""
    host: str | None = None
    """The host actor that owns it; None until a gateway first routes a client to it."""
    epoch: int = 0
    """The epoch its host took it at."""
    node: str | None = None
    """The Ray node its host ran on when it took the pod."""
    pinned_machine: str | None = None
    """The machine (host name) its workspace is on, when that is not the fleet's shared
    storage (:func:`pin_for`): only hosts running there may serve it, and it is unavailable
    while no node of that machine is up."""

    def unavailable(self, live_machines: list[str]) -> str | None:
        """Why no host may serve the pod now (its machine has no live node), or None."""
        if self.pinned_machine is None or self.pinned_machine in live_machines:
            return None
        return (
            f"pod {self.pod} is pinned to machine {self.pinned_machine} (its workspace "
            f"{self.config.get('workspace')} is not on the fleet's shared storage), which has "
            "no live node; it is back when a node of that machine is"
        )


class HostInfo(BaseModel):
    """One host actor of the fleet (``host/<name>``)."""

    name: str
    node: str = Field(description="The Ray node it was placed on first (a restart may move it).")
    machine: str = Field(default="", description="That node's machine (host name).")


class FleetSettings(BaseModel):
    """The fleet's own settings (``settings``), written by ``pod fleet up``."""

    root: str
    """Shared storage every node sees: sessions, tool spools, gateway sockets."""
    token: str
    """What a TCP client sends first (``docs/fleet.md``)."""
    tcp_port: int = 0
    """The first node's gateway TCP port (each further node's is the next one); 0: none."""
    shared: list[str] = Field(default_factory=list)
    """Further directories every node sees (``pod fleet up --shared``): a pod whose
    workspace is under one of them, or under ``root``, may run on any node."""
    ray_dir: str | None = None
    """The temp dir of the Ray head ``pod fleet up`` started (``pod fleet down`` stops that
    one only); None when it joined a cluster."""
    ray_client_port: int = 0
    """That head's Ray client server port (its one process that does not name the dir)."""

    def shared_roots(self) -> list[Path]:
        """Every directory all nodes see."""
        return [Path(self.root), *map(Path, self.shared)]


def pin_for(workspace: Path, shared: list[Path], machine: str) -> str | None:
    """The machine a pod must stay on: None when its workspace is under shared storage,
    else ``machine`` (where it was added: the only one known to have it)."""
    where = os.path.realpath(workspace)
    for root in shared:
        base = os.path.realpath(root)
        if where == base or where.startswith(base.rstrip(os.sep) + os.sep):
            return None
    return machine


def choose_host(pod: str, hosts: list[str]) -> str:
    """The host a new pod goes to: the highest ``hash(pod, host)`` (rendezvous hashing), so
    every gateway picks the same one and a host that leaves moves only its own pods."""
    if not hosts:
        raise FleetError("the fleet has no hosts; start it with `pod fleet up`")

    def score(host: str) -> bytes:
        return hashlib.blake2b(f"{pod}\0{host}".encode(), digest_size=8).digest()

    return max(hosts, key=score)


class Directory:
    """The fleet's records in a :class:`KV`: settings, hosts, and where each pod lives."""

    def __init__(self, kv: KV) -> None:
        self.kv = kv
        self.epochs = Epochs(kv)

    def settings(self) -> FleetSettings:
        """The fleet's settings; :class:`FleetError` when no fleet was set up."""
        raw = self.kv.get("settings")
        if raw is None:
            raise FleetError("this Ray cluster runs no pod fleet; start one with `pod fleet up`")
        return FleetSettings.model_validate_json(raw)

    def save_settings(self, settings: FleetSettings) -> None:
        """Record the fleet's settings."""
        self.kv.put("settings", settings.model_dump_json().encode())

    def add_host(self, info: HostInfo) -> None:
        """Record a host actor of the fleet."""
        self.kv.put(f"host/{info.name}", info.model_dump_json().encode())

    def hosts(self) -> list[HostInfo]:
        """Every host actor, by name."""
        found = [self.kv.get(key) for key in sorted(self.kv.keys("host/"))]
        return [HostInfo.model_validate_json(raw) for raw in found if raw is not None]

    def placement(self, pod: str) -> Placement | None:
        """Where the pod lives, or None when the fleet has no such pod."""
        raw = self.kv.get(f"pod/{pod}")
        return Placement.model_validate_json(raw) if raw is not None else None

    def place(self, placement: Placement) -> None:
        """Record where a pod lives."""
        self.kv.put(f"pod/{placement.pod}", placement.model_dump_json().encode())

    def pods(self) -> set[str]:
        """The names of the fleet's pods: one call to the store, nothing read or parsed."""
        return {key.removeprefix("pod/") for key in self.kv.keys("pod/")}

    def placements(self) -> list[Placement]:
        """Every pod of the fleet, by name."""
        found = [self.kv.get(key) for key in sorted(self.kv.keys("pod/"))]
        return [Placement.model_validate_json(raw) for raw in found if raw is not None]

    def owner(self, pod: str, *, exclude: str | None = None) -> str:
        """The host that owns the pod now, or the one it goes to if none does yet (or if
        ``exclude``, its owner, is gone for good). A pinned pod goes only to a host that
        started on its machine."""
        placement = self.placement(pod)
        if placement is None:
            raise FleetError(f"the fleet has no pod named {pod}; add it with `pod fleet add`")
        if placement.host is not None and placement.host != exclude:
            return placement.host
        hosts = [h for h in self.hosts() if h.name != exclude]
        if placement.pinned_machine is not None:
            hosts = [h for h in hosts if h.machine == placement.pinned_machine]
            if not hosts:
                raise FleetError(
                    f"pod {pod} is pinned to machine {placement.pinned_machine} (its workspace "
                    "is not on the fleet's shared storage), and no host of the fleet started "
                    "there; it is unavailable until a node of that machine joins the fleet"
                )
        return choose_host(pod, [h.name for h in hosts])

    def remove(self, pod: str) -> None:
        """Forget a pod that was shut down for good, and its epochs."""
        self.kv.delete(f"pod/{pod}")
        self.epochs.forget(pod)

    def clear(self) -> None:
        """Forget the whole fleet (``pod fleet down``)."""
        for key in self.kv.keys(""):
            self.kv.delete(key)
