"""Finding a workspace's protected paths at any depth: a bounded walk, before each sandboxed
command (for the read-only binds) and after it (for what it planted).

A protected path (:mod:`orchestrator.permissions.protected`: ``.git``, ``.pod``, ``.envrc``,
…) configures a command another tool runs later, outside the sandbox. The walk finds every
one that exists, at any depth, without following symlinks and without entering a protected
folder (it is bound, or compared, as a whole). It is bounded: dependency and cache folders
that no tool reads configuration from are skipped, and past :data:`MAX_ENTRIES` entries the
walk stops and says so (:attr:`ProtectedScan.complete`).
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from orchestrator.permissions.protected import protected_names

__all__ = ["MAX_ENTRIES", "SKIPPED_DIRS", "ProtectedScan", "scan_protected"]

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


def scan_protected(workspace: Path, *, max_entries: int = MAX_ENTRIES) -> ProtectedScan:
    """The protected paths under ``workspace`` (itself excluded), found breadth first."""
    names = {name.lower() for name in protected_names()}
    found: list[Path] = []
    queue: deque[str] = deque([os.fspath(workspace)])
    seen = 0
    while queue:
        folder = queue.popleft()
        try:
            entries = os.scandir(folder)
        except OSError:
            continue  # unreadable or gone: nothing there to bind
        with entries:
            for entry in entries:
                seen += 1
                if seen > max_entries:
                    return ProtectedScan(workspace, tuple(found), complete=False)
                lowered = entry.name.lower()
                if lowered in names:
                    found.append(Path(entry.path))
                    continue
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if is_dir and entry.name not in SKIPPED_DIRS:
                    queue.append(entry.path)
    return ProtectedScan(workspace, tuple(found), complete=True)
