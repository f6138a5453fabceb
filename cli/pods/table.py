"""The pods of this user as ``pod ls`` and ``pod host ls`` show them: one row a pod (the
host's and the processes'), children under their parent, drawn as a table with the host's
memory line."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from rich.cells import cell_len
from rich.table import Table

if TYPE_CHECKING:
    from orchestrator.serving.host import HostListing, HostStats, PodRow

__all__ = [
    "BORDER",
    "PodListing",
    "ago",
    "host_line",
    "host_listing",
    "live_pods",
    "mib",
    "pods_table",
    "tree_order",
]


class _Node(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def parent(self) -> str: ...


NodeT = TypeVar("NodeT", bound=_Node)


def tree_order(pods: list[NodeT]) -> list[NodeT]:
    """Pods with each one's children (and theirs) right after it; orphans at the end."""
    by_parent: dict[str, list[NodeT]] = {}
    for pod in pods:
        by_parent.setdefault(pod.parent, []).append(pod)
    ordered: list[NodeT] = []

    def add(pod: NodeT) -> None:
        ordered.append(pod)
        for child in by_parent.get(pod.name, []):
            add(child)

    for pod in by_parent.get("", []):
        add(pod)
    ordered += [pod for pod in pods if pod not in ordered]
    return ordered


@dataclass(frozen=True)
class PodListing:
    """One row of ``pod ls``: a pod of the running host (loaded or not), or a pod process of
    its own."""

    name: str
    workspace: str
    socket: str
    pid: int
    parent: str
    loaded: bool
    state: str
    """The machine state; ``unloaded`` for a host's pod not in memory, ``unreachable`` for a
    process that did not answer."""
    clients: int | None
    """Clients attached (a host's pods; None for a process: asking would be one more)."""
    last_active_ms: int | None
    """When a client last left it or it last did anything (a host's pods)."""
    rss_share_bytes: int | None
    """A loaded host pod's estimated part of the host's memory (docs/host.md)."""
    in_host: bool

    @classmethod
    def of_host(cls, row: PodRow, pid: int) -> PodListing:
        """A row of the host's ``list`` reply (``pid``: the host's)."""
        from orchestrator.protocol.filling import to_data

        return to_data(cls, row, pid=pid, parent=row.parent or "", in_host=True)

    def as_json(self) -> dict[str, object]:
        """The row as ``pod ls --json`` prints it (``status`` is ``state``, kept for scripts
        written before the host)."""
        return {
            "name": self.name,
            "workspace": self.workspace,
            "loaded": self.loaded,
            "state": self.state,
            "status": self.state,
            "clients": self.clients,
            "last_active_ms": self.last_active_ms,
            "rss_share_bytes": self.rss_share_bytes,
            "pid": self.pid,
            "socket": self.socket,
            "parent": self.parent or None,
            "host": self.in_host,
        }


def host_listing() -> HostListing | None:
    """What the running host of this user serves; None when none runs (or it did not
    answer)."""
    import asyncio

    from orchestrator.serving.host import HostError, HostListing, ask_host, host_running

    if not host_running():
        return None
    try:
        return HostListing.model_validate(asyncio.run(ask_host("list", timeout=5.0)))
    except (HostError, ValueError):
        return None  # a host that stopped meanwhile: its pods' info files say the rest


def _process_state(socket: Path) -> str:
    from orchestrator.serving.client import PodClient

    async def ask() -> str:
        client = await PodClient.connect(socket)
        try:
            return (await client.status(timeout=2.0)).status
        finally:
            await client.close()

    import asyncio

    try:
        return asyncio.run(ask())
    except Exception:  # any failure to answer is the same fact for a listing
        return "unreachable"


def live_pods() -> tuple[list[PodListing], HostStats | None]:
    """Every pod of this user, its children right after it, and the host's memory when a
    host runs. The host's pods come from its ``list`` reply, so no unloaded pod is loaded by
    being looked at; other pods (``pod serve`` processes, children of ``task`` calls) from
    their info files, each asked its state."""
    from cli.pods.discovery import list_pods  # here: `pod --help` imports this module

    listing = host_listing()
    rows: list[PodListing] = []
    in_host: set[str] = set()
    if listing is not None:
        for row in listing.pods:
            in_host.add(row.socket)
            rows.append(PodListing.of_host(row, listing.host.pid))
    for pod in list_pods():
        if str(pod.socket) in in_host or not pod.alive:
            continue
        rows.append(
            PodListing(
                name=pod.name, workspace=str(pod.workspace), socket=str(pod.socket),
                pid=pod.pid, parent=pod.parent, loaded=True, state=_process_state(pod.socket),
                clients=None, last_active_ms=None, rss_share_bytes=None, in_host=False,
            )
        )  # fmt: skip
    return tree_order(rows), listing.host if listing is not None else None


MIB = 1024 * 1024


def mib(count: int | None) -> str:
    """Bytes as MiB for a person; ``-`` when unknown."""
    return "-" if count is None else f"{count / MIB:.1f} MiB"


def ago(ms: int | None, now_s: float | None = None) -> str:
    """How long ago an epoch time in ms was, in the largest whole unit; ``-`` when unknown."""
    if ms is None:
        return "-"
    seconds = max(0.0, (time.time() if now_s is None else now_s) - ms / 1000)
    if seconds < 1:
        return "now"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size:.0f} {unit} ago"
    return f"{seconds:.0f} s ago"


WORKSPACE_MIN_WIDTH = 16
"""Narrower than this, a folded workspace path is more lines than use."""

BORDER = 3
"""What each column of the table adds around its text (a border and two spaces)."""


def pods_table(rows: list[PodListing], *, width: int, pids: bool = True) -> Table:
    """One line per pod, children indented under their parent, in ``width`` columns.

    The name is never cut or wrapped: it is what every other command takes (print the table
    with ``crop=False``: a name wider than the terminal makes the table wider). The workspace
    folds onto more lines when it is long. When even that does not fit, the columns that
    matter least are left out, and a caption names them (``--json`` has everything).
    """
    names = [f"  └ {row.name}" if row.parent else row.name for row in rows]
    optional: dict[str, tuple[list[str], str]] = {
        "clients": (["-" if r.clients is None else str(r.clients) for r in rows], "right"),
        "active": ([ago(r.last_active_ms) for r in rows], "left"),
        "memory": ([mib(r.rss_share_bytes) for r in rows], "right"),
    }
    if pids:
        optional["pid"] = ([str(r.pid) for r in rows], "right")
    optional["workspace"] = ([r.workspace for r in rows], "left")

    def natural(header: str, cells: list[str]) -> int:
        widest = max((cell_len(cell) for cell in cells), default=0)
        if header == "workspace":
            widest = min(widest, WORKSPACE_MIN_WIDTH)
        return max(len(header), widest) + BORDER

    states = [row.state for row in rows]
    needed = 1 + natural("name", names) + natural("state", states)
    room = width - needed
    shown: set[str] = set()
    for header in ("workspace", "clients", "active", "memory", "pid"):  # most useful first
        if header in optional and natural(header, optional[header][0]) <= room:
            room -= natural(header, optional[header][0])
            shown.add(header)
    left_out = [header for header in optional if header not in shown]
    table = Table(
        caption=f"({', '.join(left_out)}: a wider terminal or --json)" if left_out else None,
        caption_justify="left",
        # Narrower than a name: wider than the terminal (print with crop=False), never cut.
        width=needed if needed > width else None,
    )
    table.add_column("name", no_wrap=True, min_width=max(map(cell_len, names), default=4))
    table.add_column("state", no_wrap=True)
    for header, (_, justify) in optional.items():
        if header in shown:
            table.add_column(
                header,
                justify="right" if justify == "right" else "left",
                no_wrap=header != "workspace",
                overflow="fold",
                min_width=WORKSPACE_MIN_WIDTH if header == "workspace" else None,
            )
    for index, name in enumerate(names):
        cells = [cells[index] for header, (cells, _) in optional.items() if header in shown]
        table.add_row(name, states[index], *cells)
    return table


def host_line(host: HostStats) -> str:
    """The host's process in one line: its pid, pods loaded of those it knows, its memory."""
    memory = f"; RSS {mib(host.rss_bytes)}" if host.rss_bytes is not None else ""
    pss = f", PSS {mib(host.pss_bytes)}" if host.pss_bytes is not None else ""
    start = f", {mib(host.baseline_rss_bytes)} at start" if host.baseline_rss_bytes else ""
    return (
        f"pod host {host.pid}: {host.loaded} of {host.registered} pods loaded{memory}{pss}{start}"
    )
