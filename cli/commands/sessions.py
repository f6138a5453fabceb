"""``pod sessions ls|show|export|title``: the session files of a workspace."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from cli.errors import CliError
from cli.options import workspace_option

WorkspaceOpt = Annotated[Path, workspace_option("The workspace whose sessions to use.")]
SessionArg = Annotated[
    str | None,
    typer.Argument(
        help="A name from `pod sessions ls`, or a session file's path; default: the latest "
        "with a conversation."
    ),
]


def _pick(workspace: Path, session: str | None) -> Path:
    from orchestrator.session import SessionError, latest_session, resolve_session

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


def register(app: typer.Typer) -> None:
    """Add the ``sessions`` command group."""
    group = typer.Typer(help="List, show, export and name session files.", no_args_is_help=True)

    @group.command("ls")
    def ls(
        workspace: WorkspaceOpt = Path("."),
        json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    ) -> None:
        """List a workspace's sessions, newest last.

        state: live (a pod has it open now), turn open (its last turn never ended: it was
        paused or the pod died; it comes back paused), turn closed, or empty.
        """
        from orchestrator.session import list_sessions, sessions_dir

        rows = [_row(summary) for summary in list_sessions(workspace)]
        if json_out:
            typer.echo(json.dumps(rows))
            return
        if not rows:
            typer.echo(f"no sessions yet (they are kept in {sessions_dir(workspace)})")
            return
        table = Table()
        table.add_column("name", no_wrap=True)
        table.add_column("title", overflow="ellipsis", no_wrap=True, ratio=1)
        table.add_column("state", no_wrap=True)
        table.add_column("turns", justify="right")
        table.add_column("modified", no_wrap=True)
        forks = any("forked_from" in row for row in rows)
        if forks:
            table.add_column("forked from", no_wrap=True)
        for row in rows:
            state = row["state"]
            if state == "live" and row.get("pod"):
                state = f"live (pod {row['pod']})"
            cells = [
                row["name"],
                row.get("error") or row["title"],
                state,
                str(row["turns"]),
                row["modified"],
            ]
            table.add_row(*cells, *([row.get("forked_from", "")] if forks else []))
        console = Console()
        console.print(table)
        console.print(f"[dim]{sessions_dir(workspace)}[/]")

    @group.command("show")
    def show(session: SessionArg = None, workspace: WorkspaceOpt = Path(".")) -> None:
        """Print a session's conversation."""
        from cli.render import render_items
        from orchestrator.history import item_to_json
        from orchestrator.session import SessionError, load_session

        path = _pick(workspace, session)
        try:
            loaded = load_session(path)
        except SessionError as exc:
            raise CliError(str(exc)) from None
        console = Console()
        for warning in loaded.warnings:
            console.print(f"[yellow]! {warning}[/]")
        render_items(console, [item_to_json(i) for i in loaded.items])

    @group.command("export")
    def export(
        session: SessionArg = None,
        workspace: WorkspaceOpt = Path("."),
        fmt: Annotated[str, typer.Option("--format", help="json or md.")] = "json",
        out: Annotated[Path | None, typer.Option(help="Write here instead of stdout.")] = None,
    ) -> None:
        """Export a session as JSON (items) or a Markdown transcript."""
        from cli.render import items_to_markdown
        from orchestrator.history import item_to_json
        from orchestrator.session import SessionError, load_session

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
            typer.echo(text)
        else:
            out.write_text(text + "\n", encoding="utf-8")

    @group.command("title")
    def title(
        session: Annotated[str, typer.Argument(help="A name from `pod sessions ls`, or a path.")],
        text: Annotated[str, typer.Argument(help="The title.")],
        workspace: WorkspaceOpt = Path("."),
    ) -> None:
        """Give a session a title (shown by `pod sessions ls` instead of its first message)."""
        from orchestrator.session import (
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

    app.add_typer(group, name="sessions")
