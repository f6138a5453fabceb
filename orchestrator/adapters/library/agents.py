"""Agent files on disk: ``agents/*.md`` in Claude Code's format, found in the library's folders.

Frontmatter ``name`` (the file's stem when absent), ``description``, ``tools`` (a comma list
or a YAML list; all of the parent's when absent) and ``model`` (``inherit``, a model id, or
``sonnet``/``opus``/``haiku``); the body is the agent's system prompt. What they become is
:mod:`orchestrator.capabilities.subpods.agent_files`'s; this module only finds and parses
them, refusing (with :class:`~orchestrator.core.library.LibraryRefused`) what a hostile
repository could plant, as :mod:`.reader` does for every library file.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
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
    "FAMILY_FALLBACK",
    "AgentCatalog",
    "AgentFile",
    "family_model",
    "load_agent_files",
]

FAMILY_FALLBACK: dict[str, str] = {
    "opus": "claude-opus-5-5",
    "sonnet": "claude-sonnet-5-5",
    "haiku": "claude-haiku-5-5",
}
"""What ``model: opus|sonnet|haiku`` means when the Models API cannot be asked: the newest
model of each family the pod knows of (docs/skills.md keeps the same table)."""


@dataclass(frozen=True)
class AgentFile:
    """One agent file as parsed (the names in ``tools`` as written)."""

    name: str
    description: str
    tools: tuple[str, ...] | None
    model: str | None
    """``None`` for ``inherit`` or absent; else as written (a family or an id)."""
    prompt: str
    directory: LibraryDir
    file: str

    @property
    def origin(self) -> str:
        """Where it comes from (``user``, ``workspace``, ``claude-user``, ``claude-workspace``)."""
        return self.directory.origin

    @property
    def path(self) -> Path:
        """The file, as named."""
        return self.directory.path / self.file


@dataclass
class AgentCatalog:
    """The agent files found, by name in lookup order, and the files refused on the way."""

    agents: dict[str, Resolved[AgentFile]] = field(default_factory=dict)
    refused: list[LibraryRefused] = field(default_factory=list)


def family_model(model: str, listed: Sequence[tuple[str, str]] | None = None) -> str:
    """The model id ``model`` stands for: a family (``sonnet``) is the newest model of it in
    ``listed`` ((id, created_at) pairs from the Models API), else :data:`FAMILY_FALLBACK`'s;
    any other name is taken as an id."""
    family = model.strip().lower()
    if family not in FAMILY_FALLBACK:
        return model.strip()
    pattern = re.compile(rf"-{family}(-|$)")
    ours = [(created, model_id) for model_id, created in listed or () if pattern.search(model_id)]
    return max(ours)[1] if ours else FAMILY_FALLBACK[family]


def _parse(directory: LibraryDir, file: str) -> AgentFile:
    where = str(directory.path / file)
    text = read_library_text(directory, file)
    data, body = split_frontmatter(text, where)
    name = text_field(data, "name", where) or file.removesuffix(".md")
    check_name(name, where)
    model = text_field(data, "model", where)
    description = text_field(data, "description", where) or ""
    return AgentFile(
        name=name,
        description=escaped(" ".join(description.split())),
        tools=tuple(tools) if (tools := list_field(data, "tools", where)) is not None else None,
        model=None if model is None or model.lower() == "inherit" else model,
        prompt=body.strip(),
        directory=directory,
        file=file,
    )


def load_agent_files(
    workspace: Path, settings: SkillsConfig, *, home: Path | None = None
) -> AgentCatalog:
    """Every ``*.md`` of the library's ``agents`` folders, resolved by name."""
    found: list[tuple[str, AgentFile]] = []
    refused: list[LibraryRefused] = []
    for directory in library_dirs("agents", workspace, settings, home=home):
        listing = list_children(directory)
        refused += listing.refused
        for child in listing.children:
            if child.kind != "file" or not child.name.endswith(".md"):
                continue
            try:
                agent = _parse(directory, child.name)
            except LibraryRefused as exc:
                refused.append(exc)
                continue
            found.append((agent.name, agent))
    return AgentCatalog(agents=resolve(found), refused=refused)
