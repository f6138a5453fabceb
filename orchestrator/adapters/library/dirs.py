"""Where the library's folders are: the user's, the workspace's, and Claude Code's.

For a kind (``skills``, ``commands``, ``agents``) the folders are, in lookup order:

1. ``user``: ``~/.config/pod/<kind>/`` (beside the user's config file, so
   ``XDG_CONFIG_HOME`` moves it);
2. ``workspace``: ``<workspace>/.pod/<kind>/``;
3. ``claude-user``: ``~/.claude/<kind>/``;
4. ``claude-workspace``: ``<workspace>/.claude/<kind>/``.

The last two only with ``[skills] claude_dirs``; skills only with ``[skills] enabled``. The
user's own folders are trusted (a skill there may pre-approve tools); a workspace's come
with the repository and are not. A workspace folder must stay inside the workspace once its
symlinks are resolved, and one that is really a user folder (a pod run in ``~``) is listed
once, as the user's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from orchestrator.config.paths import user_config_file
from orchestrator.config.skills import SkillsConfig
from orchestrator.core.library import Kind, Origin

__all__ = ["LibraryDir", "library_dirs"]


@dataclass(frozen=True)
class LibraryDir:
    """One folder of library files: where it is, where it comes from, whether it is the
    user's own (trusted), and the folder it must stay inside once resolved (None: anywhere)."""

    path: Path
    origin: Origin
    trusted: bool
    within: Path | None = None

    def real_root(self) -> Path | None:
        """The folder with its symlinks resolved, or None when it leaves ``within``."""
        real = Path(os.path.realpath(self.path))
        if self.within is None:
            return real
        bound = Path(os.path.realpath(self.within))
        return real if real == bound or bound in real.parents else None


def library_dirs(
    kind: Kind, workspace: Path, settings: SkillsConfig, *, home: Path | None = None
) -> list[LibraryDir]:
    """The folders of ``kind`` in lookup order (whether or not they exist), as ``settings``
    allows. ``home`` is where ``~/.claude`` is (the user's home when None); the pod's own
    user folder follows the user's config file."""
    if kind == "skills" and not settings.enabled:
        return []
    home = home if home is not None else Path.home()
    dirs = [
        LibraryDir(user_config_file().parent / kind, "user", True),
        LibraryDir(workspace / ".pod" / kind, "workspace", False, workspace),
    ]
    if settings.claude_dirs:
        dirs += [
            LibraryDir(home / ".claude" / kind, "claude-user", True),
            LibraryDir(workspace / ".claude" / kind, "claude-workspace", False, workspace),
        ]
    trusted = {os.path.realpath(d.path) for d in dirs if d.trusted}
    # A pod run in the home folder: its .claude/ is the user's, read once and trusted.
    return [d for d in dirs if d.trusted or os.path.realpath(d.path) not in trusted]
