"""Custom command files read from the shared library's folders into the pod's catalog.

The folders and the safe reader are :mod:`orchestrator.adapters.library`'s (``commands``:
``~/.config/pod/commands/``, ``.pod/commands/``, then, with ``[skills] claude_dirs``,
``~/.claude/commands/`` and ``.claude/commands/``). A command is a ``<name>.md`` file; its
name is the file's stem, and a sub-folder shows only in its description (``review
(frontend)``), as Claude Code does. Two files of one name resolve in folder order, the
others listed as shadowed. A file that cannot be used is skipped with one alert (the reader's
refusal, or a name a menu cannot take), never a crash.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.adapters.library import (
    LibraryDir,
    LibraryRefused,
    library_dirs,
    list_children,
    list_field,
    read_library_text,
    resolve,
    split_frontmatter,
    text_field,
)
from orchestrator.config.skills import SkillsConfig
from orchestrator.core.command_text import clean_line, valid_command_name
from orchestrator.runtime.custom_commands import CommandCatalog, CommandSpec

__all__ = ["MAX_DEPTH", "CommandFiles", "load_command_files"]

MAX_DEPTH = 3
"""Sub-folders looked into below a commands folder (``a/b/c/x.md`` at most)."""

_MAX_FILES = 500
"""Command files read per folder; past it the rest are left out, with an alert."""

_MAX_FOLDERS = 200
"""Sub-folders looked into per commands folder (a repository could nest thousands)."""


@dataclass
class CommandFiles:
    """What the folders hold: the catalog's files, and the refusals to alert."""

    catalog: CommandCatalog
    refused: list[str] = field(default_factory=list)


def load_command_files(
    workspace: Path, settings: SkillsConfig, *, home: Path | None = None
) -> CommandFiles:
    """Read every command file, in lookup order; first name wins."""
    found: list[tuple[str, CommandSpec]] = []
    refused: list[str] = []
    for directory in library_dirs("commands", workspace, settings, home=home):
        _walk(directory, "", 0, found, refused.append, [_MAX_FOLDERS])
    resolved = resolve(found)
    winners = [entry.item for entry in resolved.values()]
    shadowed = [(spec, entry.item.source) for entry in resolved.values() for spec in entry.shadowed]
    return CommandFiles(CommandCatalog(files=winners, shadowed=shadowed), refused)


def _walk(
    directory: LibraryDir,
    relative: str,
    depth: int,
    found: list[tuple[str, CommandSpec]],
    refuse: Callable[[str], None],
    folders: list[int],
) -> None:
    """One folder's command files, then its sub-folders' (``folders``: how many more may be
    looked into, shared by the whole walk)."""
    listing = list_children(directory, relative)
    for refusal in listing.refused:
        refuse(str(refusal))
    count = 0
    for child in listing.children:
        inner = f"{relative}/{child.name}" if relative else child.name
        if child.kind == "dir":
            if depth < MAX_DEPTH and folders[0] > 0:
                folders[0] -= 1
                _walk(directory, inner, depth + 1, found, refuse, folders)
            elif depth < MAX_DEPTH and folders[0] == 0:
                folders[0] = -1  # said once
                refuse(
                    f"{directory.path}: more than {_MAX_FOLDERS} sub-folders; the rest are not read"
                )
            continue
        if not child.name.endswith(".md"):
            continue
        count += 1
        if count > _MAX_FILES:
            refuse(
                f"{directory.path / relative}: more than {_MAX_FILES} command files; the rest are not read"
            )
            return
        try:
            spec = _read(directory, inner, relative)
        except LibraryRefused as refusal:
            refuse(str(refusal))
            continue
        found.append((spec.name, spec))


def _read(directory: LibraryDir, inner: str, folder: str) -> CommandSpec:
    where = str(directory.path / inner)
    name = Path(inner).name[: -len(".md")]
    if not valid_command_name(name):
        raise LibraryRefused(
            where,
            "a command's name (its file's stem) may hold letters, digits and `_ . : -` only, "
            "starting with a letter or digit, at most 128 characters",
        )
    text = read_library_text(directory, inner)
    data, body = split_frontmatter(text, where)
    description = text_field(data, "description", where) or _first_line(body)
    if folder:
        description = f"{description} ({folder})" if description else f"({folder})"
    return CommandSpec(
        name=name,
        source=directory.origin,
        description=clean_line(description),
        argument_hint=clean_line(text_field(data, "argument-hint", where) or "", limit=80),
        body=body.strip("\n"),
        path=where,
        model=text_field(data, "model", where),
        allowed_tools=tuple(list_field(data, "allowed-tools", where) or ()),
        trusted=directory.trusted,
    )


def _first_line(body: str) -> str:
    for line in body.splitlines():
        if line.strip():
            return line.strip().lstrip("#").strip()
    return ""
