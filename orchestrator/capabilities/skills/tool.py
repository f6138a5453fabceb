"""``skill``: the model's way into a skill, the second step of progressive disclosure.

The system prompt lists each skill's name and description (``## Skills``); this tool returns
one skill's ``SKILL.md`` body and the paths of its other files, which the model reads with
``read_file`` (a user's skill folder is a read-only root of the pod, and is shown read-only
in the sandbox). A skill from the user's own folders that lists ``allowed-tools`` has them
allowed from this result to the end of the turn (:mod:`.grants`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Annotated

from pydantic import Field, StringConstraints

from orchestrator.adapters.library.skills import (
    SkillCatalog,
    read_skill,
    skill_files,
)
from orchestrator.capabilities.skills.grants import turn_rules
from orchestrator.capabilities.tools.arguments import ToolArgs, TypedTool
from orchestrator.capabilities.tools.base import ToolContext, ToolError, ToolOutput
from orchestrator.core.library import LibraryRefused, escaped

__all__ = ["SKILL_TOOL", "SkillArgs", "SkillTool"]

SKILL_TOOL = "skill"

Words = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]


class SkillArgs(ToolArgs):
    """``skill``'s arguments."""

    name: Words = Field(description="The skill's name, as listed under Skills.")


class SkillTool(TypedTool[SkillArgs]):
    """Read one skill: its instructions and its files."""

    name = SKILL_TOOL
    claude_code_name = "Skill"
    acp_kind = "read"
    side_effects = False
    kind = "read"
    description = (
        "Read a skill listed under Skills in the system prompt: its instructions and the "
        "paths of its files (scripts, references, templates). Call it with the skill's name "
        "when a task matches its description, before starting the task; then follow the "
        "instructions and read the files you need with read_file."
    )
    args_model = SkillArgs

    def __init__(self, catalog: SkillCatalog, claude_names: Mapping[str, str]) -> None:
        super().__init__()
        self.catalog = catalog
        self.claude_names = claude_names
        """Pod tool name -> Claude Code name, to read ``allowed-tools``."""

    async def execute(self, args: SkillArgs, ctx: ToolContext) -> ToolOutput:
        """The skill's body and files; its grant, when it may give one."""
        known = self.catalog.get(args.name)
        if known is None:
            names = ", ".join(self.catalog.skills) or "none"
            raise ToolError(f"no skill is called {escaped(args.name)!r}; the skills are: {names}")
        try:
            # Read again: the prompt listed it at start, the body is read when asked for.
            skill, body = await asyncio.to_thread(read_skill, known.directory, known.folder)
            files, more = await asyncio.to_thread(skill_files, known)
        except LibraryRefused as exc:
            raise ToolError(f"the skill {known.name} cannot be read: {exc}") from None
        lines = [
            f"# Skill: {known.name}",
            "",
            body or "(SKILL.md has no instructions beyond its description)",
            "",
            "## Files",
            "",
            f"Folder: {known.real_path} (read-only; read files with read_file)",
            *(f"- {path}" for path in files),
        ]
        if not files:
            lines.append("(no other files)")
        if more:
            lines.append(f"… and {more} more files not listed")
        grant = self._grant(skill.allowed_tools, known.trusted, ctx, self.claude_names)
        if grant:
            lines += ["", grant]
        return ToolOutput(summary=f"skill: {known.name} ({known.origin})", content="\n".join(lines))

    @staticmethod
    def _grant(
        allowed: tuple[str, ...], trusted: bool, ctx: ToolContext, names: Mapping[str, str]
    ) -> str:
        if not allowed:
            return ""
        listed = ", ".join(allowed)
        if not trusted:
            return (
                f"This skill lists allowed-tools ({listed}), but it comes from the workspace: "
                "nothing is pre-approved, those tools ask or are refused as usual."
            )
        if ctx.policy is None:
            return ""
        rules, unreadable = turn_rules(allowed, names)
        ctx.policy.grant_for_turn(rules)
        said = f"Allowed until the end of this turn: {', '.join(str(r) for r in rules)}."
        if unreadable:
            said += f" Not understood, so not allowed: {', '.join(unreadable)}."
        return said
