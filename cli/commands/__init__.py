"""Command modules; each exposes ``register(app)`` and imports heavy modules lazily."""

from __future__ import annotations

import importlib

import typer

COMMAND_MODULES = (
    "chat",
    "serve",
    "run",
    "control",
    "rewind",
    "sessions",
    "diagram",
    "protocol",
    "knowledge",
    "conformance",
    "acp",
    "mcp",
    "jobs",
    "host",
    "fleet",
    "sandbox",
)


def register_all(app: typer.Typer) -> None:
    """Attach every command module's commands to the app."""
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"cli.commands.{name}")
        module.register(app)
