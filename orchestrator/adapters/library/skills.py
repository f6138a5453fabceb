"""Skills on disk: each a folder holding ``SKILL.md``, found in the library's folders.

A skill's ``SKILL.md`` opens with YAML frontmatter: ``name`` (the folder's name when absent),
``description`` (required: it is all the system prompt says of the skill), and optionally
``allowed-tools``, ``license`` and ``metadata``; its body is what the ``skill`` tool returns.
Everything else in the folder (scripts, references, templates) is the skill's files, which
the model reads with ``read_file``.

:func:`load_skills` looks in every folder of :func:`~.dirs.library_dirs` in order; a name
found twice is the first one's, the others kept as shadowed. A skill that cannot be read or
parsed is left out and its :class:`~orchestrator.core.library.LibraryRefused` kept, for one
alert each; nothing here raises for a bad file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.adapters.library.dirs import LibraryDir, library_dirs
from orchestrator.adapters.library.reader import list_children, read_library_text
from orchestrator.config.skills import SkillsConfig
from orchestrator.core.library import (
    LibraryRefused,
    Resolved,
    check_name,
    escaped,
    list_field,
    resolve,
    split_frontmatter,
    text_field,
)

__all__ = [
    "DESCRIPTION_MAX",
    "FILES_MAX",
    "SKILL_FILE",
    "Skill",
    "SkillCatalog",
    "load_skills",
    "read_skill",
    "skill_files",
]

SKILL_FILE = "SKILL.md"

DESCRIPTION_MAX = 1024
"""The format's limit on a description; a longer one is cut (it is sent with every request)."""

FILES_MAX = 200
"""Files of one skill listed by the ``skill`` tool; past it the list says how many more."""

_FILES_DEPTH = 4


@dataclass(frozen=True)
class Skill:
    """One skill as found: its name, description, pre-approved tools, and where it is."""

    name: str
    description: str
    allowed_tools: tuple[str, ...]
    directory: LibraryDir
    folder: str
    """The skill's folder's name inside :attr:`directory`."""
    real_path: Path
    """The skill's folder, symlinks resolved (what ``read_file`` and the sandbox open)."""

    @property
    def origin(self) -> str:
        """Where it comes from (``user``, ``workspace``, ``claude-user``, ``claude-workspace``)."""
        return self.directory.origin

    @property
    def trusted(self) -> bool:
        """Whether it comes from the user's own folders (only then may it grant tools)."""
        return self.directory.trusted

    @property
    def skill_md(self) -> Path:
        """Where its ``SKILL.md`` is, as named."""
        return self.directory.path / self.folder / SKILL_FILE


@dataclass
class SkillCatalog:
    """The skills found, by name in lookup order, and the files refused on the way."""

    skills: dict[str, Resolved[Skill]] = field(default_factory=dict)
    refused: list[LibraryRefused] = field(default_factory=list)

    def get(self, name: str) -> Skill | None:
        """The skill called ``name`` (the winner of its name), or None."""
        found = self.skills.get(name)
        return found.item if found is not None else None

    def winners(self) -> list[Skill]:
        """The skills in use, in lookup order."""
        return [found.item for found in self.skills.values()]

    def read_roots(self) -> list[Path]:
        """The folders of the skills in use that are outside ``workspace``-bound folders:
        the user's, which ``read_file`` and the sandbox must be able to read."""
        return [skill.real_path for skill in self.winners() if skill.directory.within is None]


def _one_line(text: str) -> str:
    """Frontmatter text fit for one line of the system prompt or a listing."""
    flat = escaped(" ".join(text.split()))
    return flat if len(flat) <= DESCRIPTION_MAX else flat[: DESCRIPTION_MAX - 1] + "…"


def read_skill(directory: LibraryDir, folder: str) -> tuple[Skill, str]:
    """The skill in ``folder`` of ``directory`` and its ``SKILL.md`` body;
    :class:`LibraryRefused` when its name, file or frontmatter is refused."""
    where = str(directory.path / folder / SKILL_FILE)
    check_name(folder, str(directory.path / folder))
    text = read_library_text(directory, f"{folder}/{SKILL_FILE}")
    data, body = split_frontmatter(text, where)
    name = text_field(data, "name", where) or folder
    check_name(name, where)
    description = text_field(data, "description", where)
    if description is None:
        raise LibraryRefused(
            where,
            "it has no `description` in its frontmatter: the model would not know when to use it",
        )
    allowed = list_field(data, "allowed-tools", where) or []
    skill = Skill(
        name=name,
        description=_one_line(description),
        allowed_tools=tuple(allowed),
        directory=directory,
        folder=folder,
        real_path=Path(os.path.realpath(directory.path / folder)),
    )
    return skill, body.strip()


def load_skills(
    workspace: Path, settings: SkillsConfig, *, home: Path | None = None
) -> SkillCatalog:
    """Every skill of the library's folders (none when skills are off), resolved by name."""
    found: list[tuple[str, Skill]] = []
    refused: list[LibraryRefused] = []
    for directory in library_dirs("skills", workspace, settings, home=home):
        listing = list_children(directory)
        refused += listing.refused
        for child in listing.children:
            if child.kind != "dir":
                continue  # a stray file beside the skills: not a skill, nothing to say
            if not os.path.lexists(directory.path / child.name / SKILL_FILE):
                continue  # a folder without SKILL.md is not a skill
            try:
                skill, _ = read_skill(directory, child.name)
            except LibraryRefused as exc:
                refused.append(exc)
                continue
            found.append((skill.name, skill))
    return SkillCatalog(skills=resolve(found), refused=refused)


def skill_files(skill: Skill) -> tuple[list[Path], int]:
    """The files of a skill's folder besides ``SKILL.md`` (absolute, resolved paths, at
    most :data:`FILES_MAX`, hidden ones and links out of the folder left out), and how many
    more there were."""
    files: list[Path] = []
    more = 0
    # The skill's own folder is the bound: a link to another skill's file is not this one's.
    own = LibraryDir(skill.real_path, skill.directory.origin, skill.trusted, skill.real_path)
    pending: list[tuple[str, int]] = [("", 0)]
    while pending:
        relative, depth = pending.pop(0)
        for child in list_children(own, relative).children:
            inner = f"{relative}/{child.name}" if relative else child.name
            if child.kind == "dir":
                if depth + 1 < _FILES_DEPTH:
                    pending.append((inner, depth + 1))
            elif inner != SKILL_FILE:
                if len(files) < FILES_MAX:
                    files.append(Path(os.path.realpath(skill.real_path / inner)))
                else:
                    more += 1
    return files, more
