"""The sockets a pod, its host or its fleet serve, as a sandbox is to hide them.

A socket file the sandbox sees is a way to drive the pod from a command it runs (approve its
own unsandboxed call, load a pod of its own configuration into a host or a fleet). They are
hidden wherever the user put them; a folder among them that holds the workspace (a fleet's
root above its pods' workspaces) is hidden around it, entry by entry, so the workspace stays.
The servers' peer check (:mod:`orchestrator.peer`) is what refuses a socket the sandbox still
reaches: one bound after the command started, or one beyond :data:`MAX_ENTRIES`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["MAX_ENTRIES", "hidden_around"]

log = logging.getLogger(__name__)

MAX_ENTRIES = 256
"""The most entries hidden around the workspace (each is a mount per command)."""


def hidden_around(paths: Iterable[Path], workspace: Path) -> tuple[Path, ...]:
    """``paths`` to hide from a sandbox whose workspace is ``workspace`` (resolved): each as
    it is, except a folder holding the workspace, whose entries beside the way down to it are
    hidden instead (the workspace itself is never hidden)."""
    out: list[Path] = []
    for path in paths:
        path = Path(os.path.abspath(path))
        if path.exists():
            path = path.resolve()
        if workspace == path:
            continue
        if not workspace.is_relative_to(path):
            out.append(path)
            continue
        out += _beside_the_way(path, workspace, MAX_ENTRIES - len(out))
    # A path inside another hidden one is hidden with it: one mount, not one per socket of a
    # host's pods in its runtime folder.
    unique = dict.fromkeys(out)
    return tuple(p for p in unique if not any(parent in unique for parent in p.parents))


def _beside_the_way(top: Path, workspace: Path, room: int) -> list[Path]:
    """The entries of ``top`` and of each folder down to ``workspace`` that are not on the
    way (at most ``room`` of them)."""
    found: list[Path] = []
    here = top
    for part in workspace.relative_to(top).parts:
        try:
            entries = sorted(os.scandir(here), key=lambda e: e.name)
        except OSError:
            return found
        for entry in entries:
            if entry.name == part:
                continue
            if len(found) >= room:
                log.warning(
                    "%s holds more than %d entries beside the workspace: the rest stay visible "
                    "to its sandbox (its servers refuse a sandboxed peer all the same)",
                    top,
                    MAX_ENTRIES,
                )
                return found
            found.append(here / entry.name)
        here = here / part
    return found
