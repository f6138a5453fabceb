"""A fleet of pod hosts on Ray: any node serves any client, and losing a node loses nothing
anyone was told is saved (docs/fleet.md).

Ray is optional (``pip install -e .[fleet]``): this package's own namespace is pure (the
directory, epochs and placement, testable without Ray); the modules that use Ray are imported
by name. Modules: :mod:`.directory` (what the consistent store keeps: epochs, placements,
hosts), :mod:`.raykv` (Ray's internal KV as that store), :mod:`.host_actor` (``PodHost``, a
Ray actor wrapping ``orchestrator.serving.host.Host``), :mod:`.gateway` (a node's JSON-lines
front door), :mod:`.cluster` (``pod fleet up|status|down``).

Errors: :class:`FleetError` (a ``PodRuntimeError``); a write by a host that lost its pod is
``orchestrator.adapters.session.SessionFenced``.
"""

from orchestrator.serving.fleet.directory import (
    KV,
    NAMESPACE,
    Directory,
    Epochs,
    FleetError,
    FleetSettings,
    HostInfo,
    MemoryKV,
    Placement,
    choose_host,
    pin_for,
)

__all__ = [
    "KV",
    "NAMESPACE",
    "Directory",
    "Epochs",
    "FleetError",
    "FleetSettings",
    "HostInfo",
    "MemoryKV",
    "Placement",
    "choose_host",
    "pin_for",
]
