"""What a command in a workspace's pod can read, write and reach (``pod sandbox show``),
taken from the same mount plan the sandbox is made from."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.adapters.sandbox.mounts import mount_plan
from orchestrator.adapters.sandbox.sandboxing import local_sandboxing

if TYPE_CHECKING:
    from orchestrator.config.model import PodConfig

__all__ = ["sandbox_view", "view_lines"]

SHOWN_PER_LIST = 8
"""Paths a person's summary lists of each kind (``--json`` lists all)."""


def sandbox_view(config: PodConfig, *, extra_hidden: Sequence[Path] = ()) -> dict[str, Any]:
    """What the next command of a pod with ``config`` would see, as JSON-ready data:
    ``read`` (read-only: the root, and what is shown from hidden places), ``write``,
    ``private`` (empty and thrown away: ``/tmp``, ``$HOME``), ``hidden``, ``read_only``
    (inside writable places), ``network`` and the ``problems`` the sandbox would alert."""
    sandboxing = local_sandboxing(config, extra_hidden=extra_hidden)
    spec, bwrap, why = sandboxing.spec, sandboxing.bwrap, sandboxing.unavailable
    command = sandboxing.command_spec()
    mounts = mount_plan(command)
    # Hidden: each hidden path that exists, mounted over or inside a place hidden already.
    hidden = [str(p) for p in dict.fromkeys(command.hidden) if os.path.lexists(p)]

    def of(*kinds: str) -> list[str]:
        return [str(m.path) for m in mounts if m.kind in kinds]

    # What toolchains need from $HOME: shown where $HOME is hidden, read-only where written.
    writes = [m.path for m in mounts if m.kind == "write"]
    fixed = [m.path for m in mounts if m.kind == "fixed"]
    fixed_ro = [str(p) for p in fixed if any(p.is_relative_to(w) for w in writes)]
    fixed_shown = [str(p) for p in fixed if str(p) not in fixed_ro]

    return {
        "workspace": str(spec.workspace),
        "mode": config.sandbox.mode,
        "bwrap": bwrap,
        "unavailable": why,
        "read": ["/", *of("show"), *fixed_shown],
        "write": of("write"),
        "private": ["/tmp", *of("private")],
        "hidden": hidden,
        "read_only": [*of("read_only"), *fixed_ro],
        "network": _network(config),
        "problems": list(sandboxing.problems.messages),
    }


def _network(config: PodConfig) -> dict[str, Any]:
    network = config.sandbox.network
    if network is True:
        return {"mode": "all", "hosts": [], "host_loopback": True}
    if not network:
        return {"mode": "none", "hosts": [], "host_loopback": False}
    return {"mode": "hosts", "hosts": list(network), "host_loopback": False, "through": "proxy"}


def view_lines(view: dict[str, Any]) -> list[str]:
    """A person's summary of :func:`sandbox_view`."""
    lines = [f"Sandboxed commands in {view['workspace']} ([sandbox] mode = {view['mode']!r}):"]
    if view["mode"] == "off":
        lines.append("  bash runs WITHOUT the sandbox; MCP servers with sandbox = true get this:")
    if view["bwrap"] is None:
        lines.append(f"  no sandbox can be made here: {view['unavailable']}")
    lines += _listed("write", view["write"])
    lines.append("  read     everything else, read-only, but what follows")
    lines += _listed("private", view["private"], "empty; what is written there is thrown away")
    lines += _listed("shown", view["read"][1:], "read-only, from a hidden place")
    lines += _listed("hidden", view["hidden"])
    lines += _listed("read-only", view["read_only"], "protected paths and write deny rules")
    network = view["network"]
    if network["mode"] == "all":
        reach = "the whole network, the host's loopback services included"
    elif network["mode"] == "hosts":
        reach = "only " + ", ".join(network["hosts"]) + " (through the pod's proxy)"
    else:
        reach = "nothing"
    lines.append(f"  network  {reach}")
    lines += [f"  ! {problem}" for problem in view["problems"]]
    return lines


def _listed(label: str, paths: list[str], note: str = "") -> list[str]:
    if not paths:
        return []
    head = f"  {label:<8} " + (f"({note})" if note else "")
    shown = [f"    {p}" for p in paths[:SHOWN_PER_LIST]]
    more = len(paths) - SHOWN_PER_LIST
    if more > 0:
        shown.append(f"    … and {more} more (--json lists them all)")
    return [head.rstrip(), *shown]
