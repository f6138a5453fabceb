"""Agent files joining ``[agents.*]``: what a Claude Code agent file becomes for ``task``.

Each file (:mod:`orchestrator.adapters.library.agents`) becomes an
:class:`~orchestrator.config.subpods.AgentConfig`: its description, its body as the child's
role, its ``tools`` mapped to the pod's names through each tool's own ``claude_code_name``
(``Read`` is ``read_file``; a pod name or an ``mcp__`` glob is kept), and its ``model``
(``inherit``: the parent's; a family such as ``sonnet`` is kept as written and resolved when
a ``task`` call starts the child, by :class:`ModelFamilies`).
A TOML agent of the same name wins. Nothing here widens a child: ``tools`` only narrows
(``task`` refuses a tool its parent is not offered), and no permission mode is read from a
file, so a child takes its parent's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from orchestrator.adapters.library.agents import (
    FAMILY_FALLBACK,
    AgentFile,
    family_model,
    load_agent_files,
)
from orchestrator.adapters.providers.base import ProviderError
from orchestrator.config.model import PodConfig
from orchestrator.config.subpods import AgentConfig

__all__ = ["ModelFamilies", "agent_config", "with_agent_files"]


class ModelFamilies:
    """``sonnet``, ``opus``, ``haiku`` as the newest model of each the provider's Models API
    lists (asked once, on the first family a ``task`` call names), else the fallback table;
    any other name is a model id as it is."""

    def __init__(self, lister: Callable[[], Awaitable[list[tuple[str, str]]]] | None) -> None:
        self._lister = lister
        self._listed: list[tuple[str, str]] | None = None
        self._asked = False

    async def resolve(self, model: str) -> str:
        """The model id ``model`` stands for."""
        if model.strip().lower() not in FAMILY_FALLBACK:
            return model
        if not self._asked and self._lister is not None:
            self._asked = True
            try:
                self._listed = await self._lister()
            except (ProviderError, OSError):
                self._listed = None  # the table, below
        return family_model(model, self._listed)


def _pod_tools(
    names: tuple[str, ...], claude_names: Mapping[str, str], builtin: set[str]
) -> tuple[list[str], list[str]]:
    """(the pod's tool names, the names that stand for no tool of the pod)."""
    by_claude = {claude.lower(): pod for pod, claude in claude_names.items()}
    tools: list[str] = []
    unknown: list[str] = []
    for name in names:
        pod = by_claude.get(name.lower())
        if pod is not None:
            tools.append(pod)
        elif name in builtin or name.startswith("mcp__"):
            tools.append(name)
        else:
            unknown.append(name)
    return list(dict.fromkeys(tools)), unknown


def agent_config(
    agent: AgentFile, claude_names: Mapping[str, str], builtin: set[str]
) -> tuple[AgentConfig, str | None]:
    """The agent a file defines, and an alert when some of its tools were left out."""
    alert = None
    tools: list[str] | None = None
    if agent.tools is not None:
        tools, unknown = _pod_tools(agent.tools, claude_names, builtin)
        if unknown:
            alert = (
                f"agent {agent.name} ({agent.path}): tools {', '.join(unknown)} are none of "
                "the pod's, so it is offered only the others"
            )
    return (
        AgentConfig(
            description=agent.description,
            system_prompt=agent.prompt,
            tools=tools,
            model=agent.model,
        ),
        alert,
    )


def with_agent_files(config: PodConfig, *, home: Path | None = None) -> tuple[PodConfig, list[str]]:
    """``config`` with the library's agent files among its agents (a TOML agent of the same
    name wins), and the alerts for files refused or narrowed."""
    from orchestrator.capabilities.tools.registry import builtin_tools, claude_code_names

    if config.subpods.depth > 0:
        return config, []  # a child has its parent's agents, files included: read once
    catalog = load_agent_files(config.workspace, config.skills, home=home)
    alerts = [f"agent file left out: {refused}" for refused in catalog.refused]
    if not catalog.agents:
        return config, alerts
    builtin = {tool.name for tool in builtin_tools()}
    agents = dict(config.agents)
    for name, found in catalog.agents.items():
        if name in agents:
            alerts.append(
                f"agent file {found.item.path} is not used: [agents.{name}] in the config "
                "has the same name and wins"
            )
            continue
        agents[name], alert = agent_config(found.item, claude_code_names(), builtin)
        if alert is not None:
            alerts.append(alert)
    return config.model_copy(update={"agents": agents}), alerts
