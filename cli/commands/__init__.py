"""Command modules; each exposes ``register(app)`` and imports heavy modules lazily."""

from __future__ import annotations

import importlib

import typer

COMMAND_MODULES = (
    "chat",
    "serve",
    "run",
    "control",
    "sessions",
    "diagram",
    "protocol",
    "knowledge",
)


def register_all(app: typer.Typer) -> None:
    """Attach every command module's commands to the app."""
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"cli.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"cli.commands.{name}":
                raise
            continue  # a command module still being written in this tree
        module.register(app)
