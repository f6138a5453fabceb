"""``pod sessions ls|show|export``: the session files of a workspace."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from cli.errors import CliError

WorkspaceOpt = Annotated[Path, typer.Option(help="The workspace whose sessions to use.")]
SessionArg = Annotated[
    str | None, typer.Argument(help="A session file, or its name; default: the latest.")
]


def _pick(workspace: Path, session: str | None) -> Path:
    from orchestrator.session import latest_session, sessions_dir

    if session is None:
        latest = latest_session(workspace)
        if latest is None:
            raise CliError(f"no sessions for {workspace.resolve()}")
        return latest
    path = Path(session)
    if path.exists():
        return path
    candidate = sessions_dir(workspace) / (
        session if session.endswith(".jsonl") else f"{session}.jsonl"
    )
    if candidate.exists():
        return candidate
    raise CliError(f"no session {session!r} (see `pod sessions ls`)")


def register(app: typer.Typer) -> None:
    """Add the ``sessions`` command group."""
    group = typer.Typer(help="List, show and export session files.", no_args_is_help=True)

    @group.command("ls")
    def ls(
        workspace: WorkspaceOpt = Path("."),
        json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    ) -> None:
        """List a workspace's sessions, newest last."""
        from orchestrator.session import SessionError, load_session, sessions_dir

        base = sessions_dir(workspace)
        files = (
            sorted(base.glob("*.jsonl"), key=lambda p: p.stat().st_mtime_ns)
            if base.is_dir()
            else []
        )
        rows: list[dict[str, object]] = []
        for path in files:
            try:
                loaded = load_session(path)
            except SessionError as exc:
                rows.append({"name": path.stem, "path": str(path), "error": str(exc)})
                continue
            rows.append(
                {
                    "name": path.stem,
                    "path": str(path),
                    "items": len(loaded.items),
                    "turns": max((i.turn for i in loaded.items), default=0),
                    "state": "cut off / paused" if loaded.cut_off else "closed",
                    "modified": time.strftime(
                        "%Y-%m-%d %H:%M", time.localtime(path.stat().st_mtime)
                    ),
                }
            )
        if json_out:
            typer.echo(json.dumps(rows))
            return
        if not rows:
            typer.echo(f"no sessions yet (they are kept in {base})")
            return
        table = Table("name", "items", "turns", "state", "modified")
        for row in rows:
            table.add_row(
                str(row["name"]),
                str(row.get("items", "?")),
                str(row.get("turns", "?")),
                str(row.get("state", row.get("error"))),
                str(row.get("modified", "")),
            )
        Console().print(table)
        Console().print(f"[dim]{base}[/]")

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

    app.add_typer(group, name="sessions")
