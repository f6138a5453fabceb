"""The kit's options: how to start the pod under test, which calls hold it in a state, how
patient to be; and the one builder of them from command-line text, shared by ``pod
conformance`` and the pytest plugin (each turns :class:`OptionError` into its own usage
error)."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from orchestrator.errors import SetupError

__all__ = [
    "DEFAULT_APPROVAL_TOOL",
    "DEFAULT_INPUT_TOOL",
    "DEFAULT_SLOW_TOOL",
    "KIT_MCP_SERVER",
    "KitOptions",
    "OptionError",
    "ToolOptionError",
    "kit_options",
]

DEFAULT_SLOW_TOOL: dict[str, Any] = {"name": "bash", "input": {"command": "sleep 30"}}
"""The tool call the kit uses to hold a pod in ``executing_tools``."""

DEFAULT_APPROVAL_TOOL: dict[str, Any] = {
    "name": "write_file",
    "input": {"path": "conformance-approval.txt", "content": "written by the conformance kit\n"},
}
"""The tool call the kit uses to hold a pod in ``awaiting_approval`` (an edit asks by default)."""

KIT_MCP_SERVER = "kit"
"""The name the kit's own MCP server (:mod:`conformance.mcp_server`) is declared under."""

DEFAULT_INPUT_TOOL: dict[str, Any] = {"name": f"mcp__{KIT_MCP_SERVER}__ask", "input": {}}
"""The tool call the kit uses to hold a pod in ``awaiting_input``: ``ask`` of the kit's MCP
server, as a pod names MCP tools ``mcp__<server>__<tool>``; the pod must declare that server
(:func:`conformance.mcp_case.write_mcp_config` writes our pod's config for it)."""


class OptionError(SetupError, ValueError):
    """The kit's options make no sense (an empty command, one without ``{socket}``, a tool
    call of the wrong shape)."""


class ToolOptionError(OptionError):
    """A tool option's text is not a tool call: not JSON, or not an object."""


@dataclass(frozen=True, slots=True, kw_only=True)
class KitOptions:
    """How to start the pod under test and how patient to be with it."""

    command: tuple[str, ...]
    """The pod's argv, with ``{socket}``, ``{base_url}`` and ``{workspace}`` placeholders."""
    slow_tool: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_SLOW_TOOL))
    """``{"name": ..., "input": {...}}``: a call the pod runs for long enough to interrupt."""
    approval_tool: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_APPROVAL_TOOL))
    """A call the pod asks a person about before running it (and that runs fast once allowed)."""
    input_tool: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_INPUT_TOOL))
    """A call during which the tool asks the person for input (MCP ``elicitation/create``)
    and that returns quickly once answered, its result carrying the answer."""
    timeout_s: float = 10.0
    """How long to wait for any one expected event."""
    startup_timeout_s: float = 30.0
    """How long a pod may take to listen on its socket."""
    warm_pods: int = 2
    """Pods started ahead of need, in the background."""
    thinking: bool = False
    """The thinking profile: the pod runs with extended thinking on (``thinking_args``), its
    fake API makes every reply think (a signed block and a redacted one), and the kit checks
    that every request turns thinking on and that thinking blocks come back."""
    thinking_args: tuple[str, ...] = ("--thinking", "adaptive")
    """Appended to the pod's command under the thinking profile: how this pod is told to think
    (empty when the command already says so)."""
    web: bool = False
    """The server-tools profile: the pod runs with web search on (``web_args``), its fake API
    makes every reply to a request declaring web search search first (``pause_turn`` and its
    continuation, cited text, a server call left for the next response beside client calls),
    and the run fails when no server tool block ever came back."""
    web_args: tuple[str, ...] = ("--web", "on")
    """Appended to the pod's command under the server-tools profile: how this pod is told to
    search (empty when the command already says so)."""
    tree: bool = True
    """Run the tree cases too (:mod:`conformance.tree_cases`): they skip, with the reason,
    when the pod offers its model no ``task`` tool."""
    continue_args: tuple[str, ...] = ("--continue",)
    """Appended to the pod's command when a tree case restarts it after a ``kill -9``: how
    this pod is told to continue the session it was serving."""

    def __post_init__(self) -> None:
        if not self.command:
            raise OptionError("the pod command is empty")
        if "{socket}" not in " ".join(self.command):
            raise OptionError("the pod command must contain {socket}")
        for which, tool in (
            ("slow", self.slow_tool),
            ("approval", self.approval_tool),
            ("input", self.input_tool),
        ):
            name = tool.get("name")
            if not isinstance(name, str) or not isinstance(tool.get("input", {}), dict):
                raise OptionError(f'the {which} tool is {{"name": str, "input": object}}')


def tool_option(flag: str, text: str | None, default: dict[str, Any]) -> dict[str, Any]:
    """A tool call given as JSON text on the command line (``default`` when none is given)."""
    try:
        tool: Any = json.loads(text) if text else dict(default)
    except ValueError as exc:
        raise ToolOptionError(f"{flag} is not JSON: {exc}") from None
    if not isinstance(tool, dict):
        raise ToolOptionError(f'{flag} must be {{"name": ..., "input": {{...}}}}')
    return tool


def kit_options(
    command: str | Sequence[str],
    *,
    slow_tool: str | None,
    approval_tool: str | None,
    input_tool: str | None,
    timeout_s: float,
    thinking: bool,
    thinking_args: str,
    tree: bool,
    continue_args: str,
    flag_prefix: str = "--",
    web: bool = False,
    web_args: str = "--web on",
) -> KitOptions:
    """Options from the command line's text: the tool calls as JSON; ``thinking_args``,
    ``continue_args`` and a ``command`` given as one string split like a shell. ``flag_prefix`` names the tool flags in errors
    (``--`` for ``pod conformance``, ``--pod-`` for the pytest plugin)."""
    slow = tool_option(f"{flag_prefix}slow-tool", slow_tool, DEFAULT_SLOW_TOOL)
    approval = tool_option(f"{flag_prefix}approval-tool", approval_tool, DEFAULT_APPROVAL_TOOL)
    asking = tool_option(f"{flag_prefix}input-tool", input_tool, DEFAULT_INPUT_TOOL)
    return KitOptions(
        command=tuple(shlex.split(command) if isinstance(command, str) else command),
        slow_tool=slow,
        approval_tool=approval,
        input_tool=asking,
        timeout_s=timeout_s,
        thinking=thinking,
        thinking_args=tuple(shlex.split(thinking_args)),
        tree=tree,
        continue_args=tuple(shlex.split(continue_args)),
        web=web,
        web_args=tuple(shlex.split(web_args)),
    )
