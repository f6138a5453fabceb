"""The tools a pod offers, by name, and the default set built from its configuration."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from orchestrator.capabilities.permissions import pod_policy
from orchestrator.capabilities.tools.arguments import TypedTool
from orchestrator.capabilities.tools.base import AcpKind, Tool, tool_kind
from orchestrator.capabilities.tools.bash import BashTool
from orchestrator.capabilities.tools.files import EditFileTool, ReadFileTool, WriteFileTool
from orchestrator.capabilities.tools.plan import ExitPlanModeTool
from orchestrator.capabilities.tools.search import GlobTool, GrepTool
from orchestrator.config.model import PodConfig

if TYPE_CHECKING:
    from orchestrator.capabilities.jobs import Jobs


class ToolRegistry:
    """Tools by name; ``specs()`` is the stable wire form sent with every request."""

    def __init__(self, tools: Sequence[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._specs: list[dict[str, Any]] | None = None
        """The wire form, kept until the tools change (every request asks for it)."""
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        """Add a tool; a second tool with the same name is a setup error."""
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool
        self._specs = None

    def unregister(self, name: str) -> None:
        """Stop offering a tool (an MCP server's list changed, or it stopped)."""
        self._tools.pop(name, None)
        self._specs = None

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, if any."""
        return self._tools.get(name)

    def names(self) -> list[str]:
        """Registered tool names, sorted."""
        return sorted(self._tools)

    def specs(self) -> list[dict[str, Any]]:
        """``{"name", "description", "input_schema"}`` per tool, sorted by name so requests
        (and prompt caching) do not depend on registration order. A new list each call; its
        dicts are shared and must not be changed."""
        if self._specs is None:
            self._specs = [
                {
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": tool.input_schema,
                }
                for tool in (self._tools[name] for name in self.names())
            ]
        return list(self._specs)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter([self._tools[name] for name in self.names()])

    def __len__(self) -> int:
        return len(self._tools)


def default_registry(
    config: PodConfig,
    extra: Sequence[Tool] = (),
    *,
    jobs: Jobs | None = None,
    web_fetch: bool = False,
) -> ToolRegistry:
    """The built-in tools plus ``extra``, less those the permissions deny outright.

    A tool every call of which would be denied is not offered at all: the model cannot waste
    a round on it. ``extra`` is the hook for tools built elsewhere, such as the knowledge
    tools, which need more than the config to construct. With ``jobs`` (the pod's background
    jobs), ``bash`` may start them and the job tools come with it (never without it).
    ``web_fetch``: offer the local ``web_fetch`` tool (``[web] fetch`` resolved to ``local``).
    """
    policy = pod_policy(config)
    tools: list[Tool] = [
        ReadFileTool(max_bytes=config.content_cap(ReadFileTool.name)),
        WriteFileTool(),
        EditFileTool(),
        GlobTool(),
        GrepTool(max_bytes=config.content_cap(GrepTool.name)),
        # The configured timeout is both the default and the ceiling: the model may only
        # ask for less.
        BashTool(
            default_timeout_s=config.bash_timeout_s,
            max_timeout_s=config.bash_timeout_s,
            env_allow=config.tool_env_allow,
            env=config.tool_env,
            sandbox=config.sandbox.mode != "off",
        ),
        ExitPlanModeTool(),
        *extra,
    ]
    if web_fetch:
        tools.append(_web_fetch_tool(config))
    offered = [t for t in tools if policy.offered(t.name, tool_kind(t))]
    bash = next((t for t in offered if isinstance(t, BashTool)), None)
    if jobs is not None and bash is not None:
        bash.jobs = jobs
        offered += [t for t in job_tools(config, jobs) if policy.offered(t.name, tool_kind(t))]
    return ToolRegistry(offered)


def _web_fetch_tool(config: PodConfig) -> Tool:
    # Imported only for a pod that fetches: it brings httpx's client and the web adapters.
    from orchestrator.capabilities.tools.web_fetch import WebFetchTool

    return WebFetchTool(max_bytes=config.content_cap(WebFetchTool.name))


def job_tools(config: PodConfig, jobs: Jobs) -> list[Tool]:
    """``job_output``, ``job_wait`` and ``job_kill`` on the pod's jobs."""
    from orchestrator.capabilities.tools.jobs import JobKillTool, JobOutputTool, JobWaitTool

    return [
        JobOutputTool(jobs, max_bytes=config.content_cap(JobOutputTool.name)),
        # A wait is bounded like a command: the configured bash timeout is its ceiling.
        JobWaitTool(
            jobs,
            max_bytes=config.content_cap(JobWaitTool.name),
            default_timeout_s=min(30.0, config.bash_timeout_s),
            max_timeout_s=config.bash_timeout_s,
        ),
        JobKillTool(jobs, max_bytes=config.content_cap(JobKillTool.name)),
    ]


# -- the built-in tools' own metadata, gathered ---------------------------------------------


@cache
def builtin_tools() -> tuple[type[TypedTool[Any]], ...]:
    """Every built-in tool's class: the list a new tool joins, beside its own module.

    Each class says what it is called in Claude Code's hooks (``claude_code_name``) and how
    an ACP editor draws it (``acp_kind``); :func:`claude_code_names` and :func:`acp_kinds`
    gather them for the hook dialect and the ACP mapping, so neither keeps a table of tools.
    """
    # Imported on first use: the job and task tools import packages (jobs, subpods) that
    # import this one, and the hook dialect asks only when a hook runs, so loading a config
    # (which loads the hooks) does not load every tool.
    from orchestrator.capabilities.skills.tool import SkillTool
    from orchestrator.capabilities.subpods.task_tool import TaskTool
    from orchestrator.capabilities.tools.jobs import JobKillTool, JobOutputTool, JobWaitTool
    from orchestrator.capabilities.tools.knowledge import KnowledgeSearchTool, MemoryReadTool
    from orchestrator.capabilities.tools.todos import TodoWriteTool
    from orchestrator.capabilities.tools.web_fetch import WebFetchTool

    return (
        ReadFileTool,
        WriteFileTool,
        EditFileTool,
        GlobTool,
        GrepTool,
        BashTool,
        ExitPlanModeTool,
        JobOutputTool,
        JobWaitTool,
        JobKillTool,
        KnowledgeSearchTool,
        MemoryReadTool,
        TaskTool,
        TodoWriteTool,
        SkillTool,
        WebFetchTool,
    )


@cache
def claude_code_names() -> dict[str, str]:
    """Built-in tool name -> the Claude Code tool it stands for, for those that have one."""
    return {
        tool.name: tool.claude_code_name
        for tool in builtin_tools()
        if tool.claude_code_name is not None
    }


@cache
def acp_kinds() -> dict[str, AcpKind]:
    """Built-in tool name -> how an ACP editor draws it, for those that are not ``other``."""
    return {tool.name: tool.acp_kind for tool in builtin_tools() if tool.acp_kind != "other"}
