"""The table of pods ``pod ls`` and ``pod host ls`` print, and the host's memory line."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.table import Table

if TYPE_CHECKING:
    from cli.pods import PodListing
    from orchestrator.serving.host import HostStats

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
