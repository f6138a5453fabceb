"""The custom slash commands a pod offers (``list_commands`` → ``commands``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from orchestrator.protocol.data import EventData

__all__ = ["CommandData", "CommandSource", "CommandsData"]

CommandSource = Literal["user", "workspace", "claude-user", "claude-workspace", "mcp", "builtin"]
"""Where a command comes from: the user's ``~/.config/pod/commands/``, the workspace's
``.pod/commands/``, ``~/.claude/commands/``, the workspace's ``.claude/commands/``, an MCP
server's prompt, or a front-end's own command (listed only as what shadows a file)."""


class CommandData(EventData):
    """One command as a menu shows it (names and descriptions cleaned to one safe line)."""

    name: str
    """Typed after ``/`` (``review``, ``mcp__notes__brief``)."""
    description: str = ""
    argument_hint: str = ""
    """What the arguments are, as the file's ``argument-hint`` says (``[file] [focus]``)."""
    source: CommandSource
    path: str | None = None
    """The file it comes from (None for an MCP prompt)."""
    model: str | None = None
    """The model its turn asks for, as the file's ``model`` says (``opus``, an id); None:
    the pod's. Checked when it runs (docs/commands.md)."""
    shadowed_by: CommandSource | None = None
    """Set on a command another of the same name hides (listed so people see why theirs does
    not run); None on the one that runs."""


class CommandsData(EventData):
    """Reply to ``list_commands``: every command, those that run first, then shadowed ones."""

    commands: list[CommandData] = Field(default_factory=list)
    id: int | str | None = None
