"""``[sandbox]``: where ``bash`` runs, and what it may reach (docs/sandbox.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class SandboxConfig(BaseModel):
    """The sandbox of ``bash`` commands (bubblewrap)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    mode: Literal["auto", "on", "off"] = "auto"
    """``auto``: commands run in the sandbox where bubblewrap works here, otherwise unsandboxed
    with one alert; ``on``: a command that cannot be sandboxed does not run; ``off``: no
    sandbox (only your config or the command line may turn it off)."""
    network: bool = False
    """Let sandboxed commands reach the network (only your config may allow it)."""
    writable: list[Path] = Field(default_factory=list)
    """Folders sandboxed commands may write besides the workspace and ``write_roots``."""
    readable: list[Path] = Field(default_factory=list)
    """Folders sandboxed commands may read that the sandbox hides otherwise (a secret's
    folder, say)."""
