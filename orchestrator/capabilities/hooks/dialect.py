"""This pod's tools in Claude Code's words, and back: what lets a hook script written for
Claude Code read a call (``tool_name == "Bash"``, ``tool_input.file_path``) and rewrite it
(``updatedInput``) unchanged.

A tool with a Claude Code counterpart is shown under that name, its input renamed field by
field (a path made absolute, a timeout in milliseconds); the payload also carries the pod's
own name (``pod_tool_name``). Any other tool, ``mcp__<server>__<tool>`` included (the same
name in both), is shown as it is. Pure functions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class _Field:
    pod: str
    claude: str
    out: Callable[[Any, Path], Any] = lambda value, workspace: value
    back: Callable[[Any, Path], Any] = lambda value, workspace: value


def _absolute(value: Any, workspace: Path) -> Any:
    return str(workspace / value) if isinstance(value, str) else value


def _relative(value: Any, workspace: Path) -> Any:
    """A path a hook gave back: inside the workspace it becomes relative again; elsewhere it
    stays absolute, and the file tools' own scope decides (and refuses)."""
    if not isinstance(value, str):
        return value
    path = Path(value)
    if path.is_absolute() and path.is_relative_to(workspace):
        return path.relative_to(workspace).as_posix() or "."
    return value


def _ms(value: Any, workspace: Path) -> Any:
    return value * 1000 if isinstance(value, int | float) and not isinstance(value, bool) else value


def _seconds(value: Any, workspace: Path) -> Any:
    return value / 1000 if isinstance(value, int | float) and not isinstance(value, bool) else value


_PATH = _Field("path", "file_path", _absolute, _relative)
_DIR = _Field("path", "path", _absolute, _relative)

TOOLS: dict[str, tuple[str, tuple[_Field, ...]]] = {
    "bash": (
        "Bash",
        (
            _Field("timeout_s", "timeout", _ms, _seconds),
            _Field("background", "run_in_background"),
        ),
    ),
    "read_file": ("Read", (_PATH,)),
    "write_file": ("Write", (_PATH,)),
    "edit_file": ("Edit", (_PATH,)),
    "glob": ("Glob", (_DIR,)),
    "grep": ("Grep", (_DIR, _Field("case_insensitive", "-i"))),
    "task": ("Task", (_Field("name", "description"), _Field("agent", "subagent_type"))),
}
"""Pod tool → (Claude Code tool, the input fields whose names or units differ)."""


def claude_name(tool: str) -> str:
    """The name a Claude Code hook knows this tool by (the tool's own name when none)."""
    return TOOLS[tool][0] if tool in TOOLS else tool


def to_claude(tool: str, arguments: Mapping[str, Any], workspace: Path) -> dict[str, Any]:
    """A call's input as Claude Code's tool would have taken it."""
    return _renamed(tool, arguments, workspace, outward=True)


def from_claude(tool: str, arguments: Mapping[str, Any], workspace: Path) -> dict[str, Any]:
    """An ``updatedInput`` in Claude Code's words, as this pod's tool takes it."""
    return _renamed(tool, arguments, workspace, outward=False)


def _renamed(
    tool: str, arguments: Mapping[str, Any], workspace: Path, *, outward: bool
) -> dict[str, Any]:
    if tool not in TOOLS:
        return dict(arguments)
    fields = {(f.pod if outward else f.claude): f for f in TOOLS[tool][1]}
    renamed: dict[str, Any] = {}
    for key, value in arguments.items():
        field = fields.get(key)
        if field is None:
            renamed[key] = value
        elif outward:
            renamed[field.claude] = field.out(value, workspace)
        else:
            renamed[field.pod] = field.back(value, workspace)
    return renamed
