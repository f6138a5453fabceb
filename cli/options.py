"""What every command shares: bare flags and one-line summaries in help, and the
``--workspace`` check."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperCommand, TyperGroup

from cli.deferred_coercion import defer_coercion
from cli.errors import CliError

if TYPE_CHECKING:
    from orchestrator.config.model import PodConfig


class _BareFlags:
    """Shows boolean flags as ``--json``, not ``--json <bool>``.

    Typer prints a type after every option, which makes a flag read as if it took a value
    (``pod history --json true`` then takes ``true`` for a pod name).
    """

    def get_params(self, ctx: Any) -> Any:
        # Typer vendors click privately; the params are touched through public fields, but
        # for their converters (see cli/deferred_coercion.py).
        params = super().get_params(ctx)  # type: ignore[misc]
        for param in params:
            if getattr(param, "is_flag", False) and param.metavar is None:
                param.metavar = ""
        # Every command's parameters pass here before Typer converts their values.
        defer_coercion(params)
        return params

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        # Typer writes a required argument as ``{prompt}``, which reads like a template
        # placeholder left unfilled: the usage line says ``PROMPT``, as click's own does.
        pieces = super().collect_usage_pieces(ctx)  # type: ignore[misc]
        return [_ARGUMENT.sub(_capitals, piece) for piece in pieces]


_ARGUMENT = re.compile(r"^(\{|\[)([a-z_]+)[}\]]")
"""An argument as typer writes it on a usage line: ``{name}`` (required) or ``[name]``."""


def _capitals(match: re.Match[str]) -> str:
    name = match.group(2).upper()
    return name if match.group(1) == "{" else f"[{name}]"


class PodCommand(_BareFlags, TyperCommand):
    """A typer command whose flags read as flags in help, and whose usage line names its
    arguments in capitals."""


class PodGroup(_BareFlags, TyperGroup):
    """A typer group whose flags read as flags in help."""


def bare_flags(app: typer.Typer) -> None:
    """Make every command and group of ``app`` show its flags bare (see :class:`_BareFlags`)."""
    for command in app.registered_commands:
        if command.cls in (None, TyperCommand):
            command.cls = PodCommand
    for group in app.registered_groups:
        group.cls = PodGroup
        if group.typer_instance is not None:
            bare_flags(group.typer_instance)


def one_line_summaries(app: typer.Typer) -> None:
    """Give each command of ``app`` its docstring's first paragraph as one line for the
    command list of ``pod --help``: typer keeps the docstring's line breaks there, so a
    summary written over two source lines was broken mid-sentence at any width."""
    for command in app.registered_commands:
        doc = inspect.getdoc(command.callback) if command.callback else None
        if command.short_help is None and command.help is None and doc:
            command.short_help = " ".join(doc.split("\n\n", 1)[0].split())
    for group in app.registered_groups:
        if group.typer_instance is not None:
            one_line_summaries(group.typer_instance)


def rewrapped(doc: str) -> str:
    """A docstring as help text: each paragraph's lines joined, so the help screen wraps
    them at its own width. Typer keeps a docstring's line breaks after the first paragraph,
    so at 80 columns help broke lines mid-sentence (``…that has a`` / ``conversation,``). A
    line that starts a list item (``-``, ``*``) keeps its break, and a paragraph marked
    with click's ``\\b`` (a table, say) keeps its lines as written, without the mark (rich
    help, unlike click's, would print it)."""
    paragraphs = []
    for paragraph in doc.split("\n\n"):
        if paragraph.startswith("\b"):
            paragraphs.append(paragraph.removeprefix("\b").lstrip("\n"))
            continue
        lines: list[str] = []
        for line in paragraph.split("\n"):
            text = line.strip()
            if lines and not text.startswith(("- ", "* ")):
                lines[-1] += " " + text
            else:
                lines.append(text)
        paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs)


def rewrapped_help(app: typer.Typer) -> None:
    """Give every command and group of ``app`` its help with paragraphs rewrapped (see
    :func:`rewrapped`)."""
    for command in app.registered_commands:
        doc = command.help or (inspect.getdoc(command.callback) if command.callback else None)
        if doc:
            command.help = rewrapped(inspect.cleandoc(doc))
    for group in app.registered_groups:
        instance = group.typer_instance
        if instance is None:
            continue
        doc = group.help or instance.info.help
        if isinstance(doc, str):
            group.help = rewrapped(inspect.cleandoc(doc))
        rewrapped_help(instance)


def _existing_workspace(value: Path) -> Path:
    # A callback, so every command refuses a bad workspace before it starts anything.
    if not value.exists():
        raise CliError(f"workspace {value} does not exist")
    if not value.is_dir():
        raise CliError(f"workspace {value} is not a directory")
    return value


def workspace_option(help: str, *decls: str) -> Any:
    """``--workspace PATH``: must be an existing directory (a one-line error otherwise)."""
    return typer.Option(*decls, help=help, callback=_existing_workspace)


def workspace_config(workspace: Path) -> PodConfig:
    """The workspace's config as ``pod serve`` there would read it, for a command that only
    looks at it: a config error is one line, and what the config ignored (a grant a
    workspace's config may not give) is a warning line each on stderr."""
    from cli.terminal_text import visible
    from orchestrator.config.loading import ConfigError, load_config

    try:
        config = load_config(workspace)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    for warning in config.load_warnings:
        typer.echo(visible(f"pod: warning: {warning}"), err=True)
    return config
