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
    "library",
    "budget",
)

COMMANDS: dict[str, str] = {
    "chat": "chat",
    "attach": "chat",
    "serve": "serve",
    "run": "run",
    "resume": "run",
    "status": "control",
    "ls": "control",
    "history": "control",
    "compact": "control",
    "pause": "control",
    "cancel": "control",
    "shutdown": "control",
    "mode": "control",
    "rewind": "rewind",
    "fork": "rewind",
    "sessions": "sessions",
    "diagram": "diagram",
    "protocol": "protocol",
    "knowledge": "knowledge",
    "conformance": "conformance",
    "acp": "acp",
    "mcp": "mcp",
    "jobs": "jobs",
    "host": "host",
    "fleet": "fleet",
    "sandbox": "sandbox",
    "skills": "library",
    "agents": "library",
    "budget": "budget",
}
"""Each top-level command (or group) and the module that registers it, so that ``pod run``
imports and builds ``run``'s module only (cli/main.py); a test holds it to what the modules
register."""


def register_all(app: typer.Typer) -> None:
    """Attach every command module's commands to the app."""
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"cli.commands.{name}")
        module.register(app)


def register_module_of(app: typer.Typer, command: str) -> None:
    """Attach the commands of the module that has ``command`` (one of :data:`COMMANDS`)."""
    importlib.import_module(f"cli.commands.{COMMANDS[command]}").register(app)
