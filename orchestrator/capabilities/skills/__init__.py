"""Skills (docs/skills.md): the ``skill`` tool, the grants of a skill's ``allowed-tools``,
and the start-up alerts. Finding and reading skills is :mod:`orchestrator.adapters.library`."""

from __future__ import annotations

from orchestrator.capabilities.skills.grants import turn_rules, workspace_grant_alert
from orchestrator.capabilities.skills.setup import PodSkills, pod_skills
from orchestrator.capabilities.skills.tool import SKILL_TOOL, SkillTool

__all__ = [
    "SKILL_TOOL",
    "PodSkills",
    "SkillTool",
    "pod_skills",
    "turn_rules",
    "workspace_grant_alert",
]
