"""Finding a workspace's protected paths at any depth: a bounded walk, before each sandboxed
command (for the read-only binds) and after it (for what it planted).

A protected path (:mod:`orchestrator.capabilities.permissions.protected`: ``.git``, ``.pod``, ``.envrc``,
…) configures a command another tool runs later, outside the sandbox. The walk finds every
one that exists, at any depth, without following symlinks and without entering a protected
folder (it is bound, or compared, as a whole). It is bounded: dependency and cache folders
that no tool reads configuration from are skipped, and past :data:`MAX_ENTRIES` entries the
walk stops and says so (:attr:`ProtectedScan.complete`).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from orchestrator.capabilities.permissions.protected import protected_names

__all__ = [
    "MAX_ENTRIES",
    "SKIPPED_DIRS",
    "ProtectedScan",
    "bounded_walk",
    "is_dir",
    "scan_protected",
]

MAX_ENTRIES = 100_000
"""Directory entries looked at before the walk gives up (a cost bound per command: about
0.1 s on a warm cache)."""

SKIPPED_DIRS = frozenset(
    {
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        "target",
    }
)
"""Folders not walked: installed dependencies and build caches, large and not where a tool
looks for its configuration when it runs in the project."""


@dataclass(frozen=True, slots=True)
class ProtectedScan:
    """What one walk found."""

    root: Path
    """The folder walked."""
    paths: tuple[Path, ...]
    """Every protected file, folder or symlink found, in walk order (outermost first)."""
    complete: bool
    """False when the walk stopped at :data:`MAX_ENTRIES` (the rest was not looked at)."""


def bounded_walk(
    root: str, visit: Callable[[os.DirEntry[str], str], bool], max_entries: int = MAX_ENTRIES
) -> bool:
    """Breadth first under ``root`` (itself excluded): ``visit(entry, relative)`` is told each
    entry and its path relative to ``root``, and says whether to walk into it (a folder; a
    symlink is never followed). An unreadable folder is passed over. False when it stopped at
    ``max_entries`` entries (the rest was not looked at)."""
    queue: deque[tuple[str, str]] = deque([(root, "")])
    seen = 0
    while queue:
        folder, relative = queue.popleft()
        try:
            entries = os.scandir(folder)
        except OSError:
            continue  # unreadable or gone: nothing there
        with entries:
            for entry in entries:
                seen += 1
                if seen > max_entries:
                    return False
                below = f"{relative}/{entry.name}" if relative else entry.name
                if visit(entry, below) and is_dir(entry):
                    queue.append((entry.path, below))
    return True


def is_dir(entry: os.DirEntry[str]) -> bool:
    """Whether ``entry`` is a folder (not a symlink to one)."""
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def scan_protected(workspace: Path, *, max_entries: int = MAX_ENTRIES) -> ProtectedScan:
    """The protected paths under ``workspace`` (itself excluded), found breadth first."""
    names = {name.lower() for name in protected_names()}
    found: list[Path] = []

    def visit(entry: os.DirEntry[str], _relative: str) -> bool:
        if entry.name.lower() in names:
            found.append(Path(entry.path))
            return False
        return entry.name not in SKIPPED_DIRS

    complete = bounded_walk(os.fspath(workspace), visit, max_entries)
    return ProtectedScan(workspace, tuple(found), complete=complete)
