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
from functools import cache
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

FIELDS: dict[str, tuple[_Field, ...]] = {
    "Bash": (
        _Field("timeout_s", "timeout", _ms, _seconds),
        _Field("background", "run_in_background"),
    ),
    "Read": (_PATH,),
    "Write": (_PATH,),
    "Edit": (_PATH,),
    "Glob": (_DIR,),
    "Grep": (_DIR, _Field("case_insensitive", "-i")),
    "Task": (_Field("name", "description"), _Field("agent", "subagent_type")),
    "Skill": (_Field("name", "skill"),),
}
"""Claude Code tool -> the input fields whose names or units differ from the pod tool that
stands for it. Which pod tool that is, each tool says itself (``claude_code_name``)."""


def _claude_code_names() -> dict[str, str]:
    # Imported on first use: the tools import the config, which imports the hooks' config,
    # and a config (or ``pod --help``) must not load every tool to read a hook table.
    from orchestrator.capabilities.tools.registry import claude_code_names

    return claude_code_names()


@cache
def tools() -> dict[str, tuple[str, tuple[_Field, ...]]]:
    """Pod tool -> (its Claude Code tool, the input fields whose names or units differ),
    gathered from the tools' own ``claude_code_name``."""
    return {tool: (claude, FIELDS.get(claude, ())) for tool, claude in _claude_code_names().items()}


def __getattr__(name: str) -> Any:
    # ``TOOLS`` is gathered when first asked for, like :func:`tools`.
    if name == "TOOLS":
        return tools()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def claude_name(tool: str) -> str:
    """The name a Claude Code hook knows this tool by (the tool's own name when none)."""
    return _claude_code_names().get(tool, tool)


def to_claude(tool: str, arguments: Mapping[str, Any], workspace: Path) -> dict[str, Any]:
    """A call's input as Claude Code's tool would have taken it."""
    return _renamed(tool, arguments, workspace, outward=True)


def from_claude(tool: str, arguments: Mapping[str, Any], workspace: Path) -> dict[str, Any]:
    """An ``updatedInput`` in Claude Code's words, as this pod's tool takes it."""
    return _renamed(tool, arguments, workspace, outward=False)


def _renamed(
    tool: str, arguments: Mapping[str, Any], workspace: Path, *, outward: bool
) -> dict[str, Any]:
    table = tools()
    if tool not in table:
        return dict(arguments)
    fields = {(f.pod if outward else f.claude): f for f in table[tool][1]}
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
