"""The host's registry file: the pods it serves, so that the next host binds them again.

A host that starts finds entries there only when the previous host did not shut its pods
down: it was killed (``kill -9``, the OOM killer) or it detached (an upgrade). It binds them
again, so each comes back from its session when a client connects, but it did not start them:
they are *restored* pods (:attr:`~orchestrator.serving.host.slot.PodSlot.restored`), and they must not
keep a host that leaves with its last pod (``--exit-when-empty``) running forever.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from orchestrator.config.paths import runtime_dir

__all__ = ["read_registry", "registry_file", "write_registry"]


def registry_file() -> Path:
    """Where the host keeps the pods it serves, so a restarted host binds them again."""
    return runtime_dir() / "host.registry"


def write_registry(path: Path, entries: list[dict[str, Any]]) -> None:
    """Replace the registry with ``entries`` (0600, never through a link, all or nothing)."""
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as file:
        json.dump(entries, file)
    os.replace(tmp, path)


def read_registry(path: Path) -> list[dict[str, Any]]:
    """The entries of the registry (``socket``, ``config``); none when it is absent or
    unreadable (a host must start whatever a previous one left)."""
    try:
        entries = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []
