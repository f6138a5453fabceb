"""``pod sessions ls|show|export|title``: the session files of a workspace."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from cli.errors import CliError
from cli.options import workspace_option
from cli.pods.table import BORDER
from cli.terminal_text import visible

WorkspaceOpt = Annotated[Path, workspace_option("The workspace whose sessions to use.")]
SessionArg = Annotated[
    str | None,
    typer.Argument(
        help="A name from `pod sessions ls`, or a session file's path; default: the latest "
        "with a conversation."
    ),
]


def _pick(workspace: Path, session: str | None) -> Path:
    from orchestrator.adapters.session import SessionError, latest_session, resolve_session

    if session is None:
        latest = latest_session(workspace, with_content=True) or latest_session(workspace)
        if latest is None:
            raise CliError(f"no sessions for {workspace.resolve()}")
        return latest
    try:
        path = resolve_session(workspace, session)
    except SessionError as exc:
        raise CliError(str(exc)) from None
    if not path.is_file():
        raise CliError(f"no session file {path}")
    return path


def _row(summary: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "name": summary.name,
        "title": summary.title,
        "state": summary.state,
        "items": summary.items,
        "turns": summary.turns,
        "modified": time.strftime("%Y-%m-%d %H:%M", time.localtime(summary.modified_ms / 1000)),
        "path": str(summary.path),
    }
    if summary.holder is not None:
        row["pod"] = summary.holder.get("pod")
        row["pid"] = summary.holder.get("pid")
    if summary.error is not None:
        row["error"] = summary.error
    if summary.forked_from is not None:
        row["forked_from"] = summary.forked_from
    return row


TITLE_MIN_WIDTH = 12
"""Narrower than this, a cut title says too little to pick a session by."""


def sessions_table(rows: list[dict[str, Any]], *, width: int) -> Table:
    """The rows of ``pod sessions ls`` as a table for ``width`` columns.

    The name is never cut: it is the value ``--session`` takes (print with ``crop=False``: a
    name wider than the terminal makes the table wider). The state is never cut either. The
    title takes the room that is left and is cut with an ellipsis; when even a short title does
    not fit, the columns that matter least are left out, and a caption names them.
    """
    names = [str(row["name"]) for row in rows]
    states = [
        f"live (pod {row['pod']})" if row["state"] == "live" and row.get("pod") else row["state"]
        for row in rows
    ]
    titles = [visible(str(row.get("error") or row["title"])) for row in rows]
    optional: dict[str, list[str]] = {
        "turns": [str(row["turns"]) for row in rows],
        "modified": [str(row["modified"]) for row in rows],
    }
    if any("forked_from" in row for row in rows):
        optional["forked from"] = [str(row.get("forked_from", "")) for row in rows]

    def natural(header: str, cells: list[str]) -> int:
        return max(len(header), *(cell_len(cell) for cell in cells)) + BORDER

    needed = 1 + natural("name", names) + natural("state", states)
    title_width = min(natural("title", titles), TITLE_MIN_WIDTH + BORDER)
    room = width - needed - title_width
    shown: list[str] = []
    for header, cells in optional.items():  # most useful first
        if natural(header, cells) <= room:
            room -= natural(header, cells)
            shown.append(header)
    left_out = [header for header in optional if header not in shown]
    needed += sum(natural(header, optional[header]) for header in shown)
    title_room = max(title_width, width - needed) - BORDER
    needed += title_width
    table = Table(
        caption=f"({', '.join(left_out)}: a wider terminal or --json)" if left_out else None,
        caption_justify="left",
        # Narrower than a name: wider than the terminal (print with crop=False), never cut.
        width=needed if needed > width else None,
    )
    table.add_column("name", no_wrap=True, min_width=max(map(cell_len, names)))
    table.add_column(
        "title",
        overflow="ellipsis",
        no_wrap=True,
        min_width=title_width - BORDER,
        max_width=title_room,
    )
    table.add_column("state", no_wrap=True, min_width=max(map(cell_len, states)))
    for header in shown:
        table.add_column(
            header,
            justify="right" if header == "turns" else "left",
            no_wrap=True,
            min_width=natural(header, optional[header]) - BORDER,
        )
    for index, name in enumerate(names):
        cells = [optional[header][index] for header in shown]
        table.add_row(name, titles[index], states[index], *cells)
    return table


def ls(
    workspace: WorkspaceOpt = Path("."),
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List a workspace's sessions, newest last.

    state: live (a pod has it open now), turn open (its last turn never ended: it was
    paused or the pod died; it comes back paused), turn closed, or empty.
    """
    from orchestrator.adapters.session import list_sessions, sessions_dir

    rows = [_row(summary) for summary in list_sessions(workspace)]
    if json_out:
        typer.echo(json.dumps(rows))
        return
    if not rows:
        typer.echo(f"no sessions yet (they are kept in {sessions_dir(workspace)})")
        return
    console = Console()
    console.print(sessions_table(rows, width=console.width), crop=False)
    console.print(f"[dim]{sessions_dir(workspace)}[/]")


def show(session: SessionArg = None, workspace: WorkspaceOpt = Path(".")) -> None:
    """Print a session's conversation."""
    from cli.render import render_items
    from orchestrator.adapters.session import SessionError, load_session
    from orchestrator.core.history import item_to_json

    path = _pick(workspace, session)
    try:
        loaded = load_session(path)
    except SessionError as exc:
        raise CliError(str(exc)) from None
    console = Console()
    for warning in loaded.warnings:
        console.print(Text(visible(f"! {warning}"), style="yellow"))
    render_items(console, [item_to_json(i) for i in loaded.items])


def export(
    session: SessionArg = None,
    workspace: WorkspaceOpt = Path("."),
    fmt: Annotated[str, typer.Option("--format", help="json or md.")] = "json",
    out: Annotated[Path | None, typer.Option(help="Write here instead of stdout.")] = None,
) -> None:
    """Export a session as JSON (items) or a Markdown transcript."""
    from cli.render import items_to_markdown
    from orchestrator.adapters.session import SessionError, load_session
    from orchestrator.core.history import item_to_json

    if fmt not in ("json", "md"):
        raise CliError(f"unknown format {fmt!r}; use json or md")
    try:
        loaded = load_session(_pick(workspace, session))
    except SessionError as exc:
        raise CliError(str(exc)) from None
    items = [item_to_json(i) for i in loaded.items]
    text = (
        json.dumps(items, ensure_ascii=False, indent=2)
        if fmt == "json"
        else items_to_markdown(items)
    )
    if out is None:
        # On a terminal the transcript is shown, not obeyed; into a file or a pipe it
        # goes as it is.
        typer.echo(visible(text) if sys.stdout.isatty() else text)
    else:
        out.write_text(text + "\n", encoding="utf-8")


def title(
    session: Annotated[str, typer.Argument(help="A name from `pod sessions ls`, or a path.")],
    text: Annotated[str, typer.Argument(help="The title.")],
    workspace: WorkspaceOpt = Path("."),
) -> None:
    """Give a session a title (shown by `pod sessions ls` instead of its first message)."""
    from orchestrator.adapters.session import (
        SessionError,
        SessionLocked,
        SessionWriter,
        load_session,
        session_holder,
    )

    line = " ".join(text.split())
    if not line:
        raise CliError("the title is empty")
    path = _pick(workspace, session)
    try:
        header = load_session(path).header
        writer = SessionWriter(path, pod=header.pod, workspace=Path(header.workspace))
    except SessionLocked:
        holder = session_holder(path) or {}
        raise CliError(
            f"session {path.stem} is open in pod {holder.get('pod', '?')}; "
            "title it once that pod has stopped"
        ) from None
    except SessionError as exc:
        raise CliError(str(exc)) from None
    try:
        writer.title(line)
    finally:
        writer.close()


def register(app: typer.Typer) -> None:
    """Add the ``sessions`` command group."""
    group = typer.Typer(help="List, show, export and name session files.", no_args_is_help=True)

    group.command("ls")(ls)
    group.command("show")(show)
    group.command("export")(export)
    group.command("title")(title)
    app.add_typer(group, name="sessions")
