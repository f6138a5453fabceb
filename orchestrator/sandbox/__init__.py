"""The sandbox of ``bash`` commands: bubblewrap, read-only root, the workspace writable.

:mod:`.config` is the ``[sandbox]`` table; :mod:`.bwrap` builds the command line (pure) and
finds a working ``bwrap``; :mod:`.hints` tells the model when a failure looks like the
sandbox's doing. See docs/sandbox.md.
"""

from __future__ import annotations

from orchestrator.sandbox.config import SandboxConfig

__all__ = ["SandboxConfig"]
