"""Writing skills, commands and agent files for tests: the user's, a workspace's, Claude's."""

from __future__ import annotations

import os
from pathlib import Path


def user_library(kind: str) -> Path:
    """``~/.config/pod/<kind>`` as the tests' isolated config home has it."""
    return Path(os.environ["XDG_CONFIG_HOME"]) / "pod" / kind


def write_skill(
    folder: Path,
    name: str,
    description: str,
    body: str = "Do the thing.",
    *,
    extra: str = "",
    files: dict[str, str] | None = None,
) -> Path:
    """A skill folder ``folder/name`` with its SKILL.md and ``files``; its folder."""
    skill = folder / name
    skill.mkdir(parents=True, exist_ok=True)
    (skill / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}\n", encoding="utf-8"
    )
    for relative, text in (files or {}).items():
        path = skill / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return skill
