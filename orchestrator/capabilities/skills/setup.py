"""A pod's skills at start: what the prompt lists, the tool, the roots, and the alerts.

Found once when the pod is built (:func:`pod_skills`): the system prompt's ``## Skills``
section is fixed for the pod's life (prompt caching reads it at every request), and a skill
added later is found by the next pod. Every refused file is one ``warn`` alert naming it
and why; workspace skills that list ``allowed-tools`` are one more.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.adapters.library.skills import SkillCatalog, load_skills
from orchestrator.capabilities.skills.grants import workspace_grant_alert
from orchestrator.capabilities.skills.tool import SkillTool
from orchestrator.capabilities.tools.registry import claude_code_names
from orchestrator.config.model import PodConfig

__all__ = ["PodSkills", "pod_skills"]


@dataclass
class PodSkills:
    """What a pod takes from its skills."""

    catalog: SkillCatalog = field(default_factory=SkillCatalog)
    listed: list[tuple[str, str]] = field(default_factory=list)
    """(name, description) for the system prompt, in lookup order."""
    read_roots: list[Path] = field(default_factory=list)
    """Skill folders outside the workspace: read-only roots of the pod and its sandbox."""
    alerts: list[str] = field(default_factory=list)
    tool: SkillTool | None = None
    """The ``skill`` tool, when there is a skill to read."""


def pod_skills(config: PodConfig, *, home: Path | None = None) -> PodSkills:
    """The skills of ``config``'s library folders (nothing when ``[skills] enabled`` is off)."""
    if not config.skills.enabled:
        return PodSkills()
    catalog = load_skills(config.workspace, config.skills, home=home)
    alerts = [f"skill left out: {refused}" for refused in catalog.refused]
    asking = [
        (skill.name, str(skill.skill_md), skill.allowed_tools)
        for skill in catalog.winners()
        if skill.allowed_tools and not skill.trusted
    ]
    grant_alert = workspace_grant_alert(asking)
    if grant_alert is not None:
        alerts.append(grant_alert)
    winners = catalog.winners()
    return PodSkills(
        catalog=catalog,
        listed=[(skill.name, skill.description) for skill in winners],
        read_roots=catalog.read_roots(),
        alerts=alerts,
        tool=SkillTool(catalog, claude_code_names()) if winners else None,
    )
