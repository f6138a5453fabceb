"""Ray nodes on this machine, each a ``ray start`` with a temp dir of its own: a fleet tried
on one machine, its tests, and its failure bench (``bench/fleet_kill.py``).

A node is known by its temp dir, which every long-lived process of it names on its command
line (the GCS, the raylet, the log monitor), and the node's other processes (agents, workers,
the commands a pod runs) descend from those. So one node can be stopped, or SIGKILLed as a
machine that dies, by process id, without touching any other Ray on the machine: ``ray
stop`` stops every Ray process of the machine, other people's clusters included.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from orchestrator.adapters.procs.supervisor import alive
from orchestrator.serving.fleet.directory import FleetError

RAY_START_TIMEOUT_S = 120.0


def ray_command() -> str:
    """The ``ray`` command of this interpreter's environment (a venv's ``bin`` is often not on
    ``PATH``), else whichever ``PATH`` finds."""
    beside = Path(sys.executable).parent / "ray"
    return str(beside) if beside.exists() else "ray"


def free_port() -> int:
    """A TCP port nothing listens on now (the kernel's pick)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass(frozen=True)
class LocalNode:
    """One Ray node started here by :func:`start_node`."""

    temp_dir: Path
    address: str
    """The cluster's GCS address (``127.0.0.1:port``), which other nodes join."""
    label: str
    """The name of the custom resource the node carries (one unit): how a driver tells
    which Ray node id is this one (:func:`node_id`)."""
    head: bool
    client_port: int = 0
    """The head's Ray client server port (named on that server's command line only)."""

    def processes(self) -> list[int]:
        """Every live process of this node now: those naming its temp dir (or, for the head,
        its client server), and all their descendants."""
        # Whole path components and values only: ``/tmp/x/a`` must not find ``/tmp/x/ab``.
        marks = [f"{self.temp_dir}/", f"{self.temp_dir} "]
        if self.head and self.client_port:
            marks.append(f"--port={self.client_port} ")
        table = process_table()
        roots = {pid for pid, (_, args) in table.items() if any(m in f"{args} " for m in marks)}
        roots.discard(os.getpid())
        found = set(roots)
        frontier = list(roots)
        while frontier:
            parent = frontier.pop()
            for pid, (ppid, _) in table.items():
                if ppid == parent and pid not in found:
                    found.add(pid)
                    frontier.append(pid)
        return sorted(found)

    def kill(self, sig: int = signal.SIGKILL) -> list[int]:
        """Send ``sig`` to every process of the node at once (the list taken first: a child
        whose parent died is re-parented and could no longer be found); the pids signalled."""
        pids = self.processes()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        return pids

    def stop(self, *, timeout_s: float = 10.0) -> None:
        """SIGTERM the node, SIGKILL what is left after ``timeout_s``. The processes are
        listed first: a worker whose raylet ended first is re-parented, and only the list
        still knows it is this node's."""
        pids = set(self.kill(signal.SIGTERM))
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and any(alive(pid) for pid in pids):
            time.sleep(0.2)
        for pid in pids | set(self.processes()):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


NODE_CHECKS: dict[str, str] = {
    "RAY_health_check_period_ms": "1000",
    "RAY_health_check_timeout_ms": "2000",
    "RAY_health_check_failure_threshold": "5",
}
"""How a head's GCS tells a node is dead: a check a second, five missed in a row. Ray's own
default (every 3 s, 10 s to answer) takes some 15 s to notice a node whose processes were
killed, and every pod of its hosts waits that long before its host restarts elsewhere; a
node that answers no check for five seconds is as good as gone for an interactive pod. A
value already in the environment wins."""


LOOPBACK_RAY_START = """\
import sys
import ray._private.services as services
# `ray start` turns a loopback --node-ip-address into the machine's outward address; kept as
# given, the GCS, raylet, agents and workers all bind to it, so nothing listens outward.
services.resolve_ip_for_localhost = lambda host: host
from ray.scripts.scripts import main
sys.argv[0] = "ray"
main()
"""
"""``ray start`` with a loopback node address kept (run as ``python -c``)."""


def _loopback(host: str) -> bool:
    return host == "localhost" or host.startswith("127.") or host == "::1"


def start_node(
    temp_dir: Path,
    *,
    label: str,
    address: str | None = None,
    num_cpus: int = 1,
    object_store_mb: int | None = 80,
    env: dict[str, str] | None = None,
    port: int | None = None,
    node_ip: str | None = None,
) -> LocalNode:
    """``ray start`` a head (no ``address``) or a node joining ``address``, with its own temp
    dir and ports (a head's GCS on ``port``, else a free one), and a custom resource
    ``label``. ``object_store_mb`` None: Ray's default. ``node_ip``: the node's address
    (``--node-ip-address``; a loopback one keeps every listener of the node on loopback).
    :class:`FleetError` when Ray cannot start (what it printed ends the message)."""
    temp_dir.mkdir(parents=True, exist_ok=True)
    environ = {**os.environ, "RAY_AUTH_MODE": os.environ.get("RAY_AUTH_MODE", "disabled")}
    environ.update(env or {})
    if "RAY_AUTH_TOKEN_PATH" in (env or {}):
        environ.pop("RAY_AUTH_TOKEN", None)  # Ray reads this one first: the path must win
    if address is None:  # the GCS runs on the head, and it alone checks nodes
        environ = {**NODE_CHECKS, **environ}
    launcher = [ray_command()]
    if node_ip is not None and _loopback(node_ip):
        launcher = [sys.executable, "-c", LOOPBACK_RAY_START]
    command = [
        *launcher, "start", f"--temp-dir={temp_dir}", f"--num-cpus={num_cpus}",
        f"--resources={json.dumps({label: 1})}", "--disable-usage-stats",
        f"--dashboard-agent-listen-port={free_port()}",
    ]  # fmt: skip
    if node_ip is not None:
        command.append(f"--node-ip-address={node_ip}")
    if object_store_mb is not None:
        command.append(f"--object-store-memory={object_store_mb * 1024 * 1024}")
    client_port = 0
    if address is None:
        port, client_port = port or free_port(), free_port()
        address = f"{node_ip or '127.0.0.1'}:{port}"
        command += [
            "--head", f"--port={port}", f"--ray-client-server-port={client_port}",
            "--include-dashboard=false", f"--dashboard-port={free_port()}",
        ]  # fmt: skip
    else:
        command.append(f"--address={address}")
    try:
        done = subprocess.run(
            command,
            env=environ,
            capture_output=True,
            text=True,
            check=False,
            timeout=RAY_START_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FleetError(f"ray start could not run here: {exc}") from None
    node = LocalNode(
        temp_dir=temp_dir,
        address=address,
        label=label,
        head=client_port != 0,
        client_port=client_port,
    )
    if done.returncode != 0:
        node.stop(timeout_s=2.0)  # whatever it started before it failed
        raise FleetError(f"ray start failed here: {done.stderr.strip()[-800:]}")
    return node


def node_id(label: str) -> str:
    """The Ray node id of the live node carrying the resource ``label`` (a driver must be
    connected)."""
    import ray

    for node in ray.nodes():  # type: ignore[no-untyped-call]
        if node.get("Alive") and label in node.get("Resources", {}):
            found: str = node["NodeID"]
            return found
    raise FleetError(f"no live Ray node carries the resource {label}")


def process_table() -> dict[int, tuple[int, str]]:
    """Every process of the machine: pid → (parent pid, command line)."""
    table: dict[int, tuple[int, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            args = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # it ended meanwhile
        # The command name is in parentheses and may hold spaces: the fields follow the last.
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        table[int(entry.name)] = (ppid, args)
    return table
