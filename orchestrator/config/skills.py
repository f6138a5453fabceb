"""``[skills]``: the shared library of skills, custom commands and agent files (docs/skills.md).

The model's field docstrings are the key reference of docs/configuration.md. A workspace's
own ``.pod/config.toml`` may only narrow this table (:func:`narrowed_skills`, called from
:mod:`orchestrator.config.grants`): turn skills or the ``.claude`` folders off, or list fewer
characters of skills in the system prompt.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "PROMPT_MAX_CHARS",
    "PROMPT_MAX_CHARS_LIMIT",
    "SkillsConfig",
    "narrowed_skills",
]

PROMPT_MAX_CHARS = 8_000
"""The ``## Skills`` section's default budget, in characters."""

PROMPT_MAX_CHARS_LIMIT = 100_000
"""The most any source may give the section: it is sent with every request."""


class SkillsConfig(BaseModel):
    """Skills, and where skills, custom commands and agent files are looked for."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, defer_build=True)

    enabled: bool = True
    """Skills are read: the system prompt lists them and the model has the ``skill`` tool.
    Off: neither (commands and agent files are not affected)."""
    claude_dirs: bool = True
    """Also read ``~/.claude/<kind>/`` and the workspace's ``.claude/<kind>/`` (skills,
    commands, agents), after the pod's own folders, as Claude Code keeps them."""
    prompt_max_chars: int = Field(default=PROMPT_MAX_CHARS, ge=0, le=PROMPT_MAX_CHARS_LIMIT)
    """Characters of skill names and descriptions the system prompt's ``## Skills`` section
    may hold; skills past it are named only, and the section says so (at most 100,000)."""


def narrowed_skills(table: Any, user: Mapping[str, Any]) -> tuple[Any, list[str]]:
    """The ``[skills]`` a workspace's file may give over the user's ``user``: ``enabled`` or
    ``claude_dirs`` turned off, a smaller ``prompt_max_chars``; and the keys it tried beyond
    that. (Values of the wrong type are passed on untouched, so validation names them.)"""
    if not isinstance(table, Mapping):
        return table, []
    skills = dict(table)
    refused: list[str] = []
    for key in ("enabled", "claude_dirs"):
        # Turning a source on is the user's call: a repository may only turn one off.
        if key in skills and skills[key] is not False:
            del skills[key]
            refused.append(f"skills.{key}")
    chars, limit = skills.get("prompt_max_chars"), user.get("prompt_max_chars", PROMPT_MAX_CHARS)
    if isinstance(chars, int) and isinstance(limit, int) and chars > limit:
        del skills["prompt_max_chars"]
        refused.append("skills.prompt_max_chars")
    return skills, refused
