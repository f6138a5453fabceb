"""``pod diagram``: render the lifecycle machine as mermaid, dot, svg, png or a Markdown table."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from cli.errors import CliError


class Format(StrEnum):
    """Output formats of ``pod diagram``."""

    mermaid = "mermaid"
    dot = "dot"
    svg = "svg"
    png = "png"
    md = "md"


def diagram(
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.mermaid,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write to this file, not stdout.")
    ] = None,
) -> None:
    """Render the pod lifecycle diagram from the machine class (mermaid by default)."""
    from cli.diagrams import DiagramError, render_diagram

    try:
        content = render_diagram(fmt.value)
    except DiagramError as exc:
        raise CliError(str(exc)) from exc
    data = content if isinstance(content, bytes) else content.encode("utf-8")
    if out is not None:
        try:
            out.write_bytes(data)
        except OSError as exc:
            raise CliError(f"cannot write {out}: {exc.strerror or exc}") from exc
        return
    if isinstance(content, bytes) and sys.stdout.isatty():
        raise CliError(f"{fmt.value} is binary; give --out FILE or redirect stdout")
    sys.stdout.buffer.write(data)
    sys.stdout.flush()


def register(app: typer.Typer) -> None:
    """Add the ``diagram`` command."""

    app.command("diagram")(diagram)
