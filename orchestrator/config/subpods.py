"""``[subpods]`` and ``[agents.<name>]``: how a pod delegates to child pods (docs/subpods.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ChildMode = Literal["read-only", "default", "accept-edits", "yolo"]

# A child's mode may not be wider than its parent's (``config.permissions.MODE_REACH``). A
# child is never started in ``plan``: nobody would be there to approve its plan.


class SubpodsConfig(BaseModel):
    """Limits of the ``task`` tool, and where this pod stands in a tree of pods."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, defer_build=True)

    enabled: bool = True
    """Offer the model the ``task`` tool (delegating to child pods) while ``depth`` is below
    ``max_depth``."""
    max_children: int = Field(default=4, ge=1, le=64)
    """Children that run at once; further ``task`` calls wait for one to end."""
    max_depth: int = Field(default=2, ge=0, le=8)
    """How deep the tree may grow: a pod at this depth is not offered ``task``."""
    child_max_tokens: int | None = Field(default=None, gt=0)
    """Each child's budget of tokens (input, output and cache, over its turn); past it the
    child stops with ``limit_reached`` and the parent's call says so. None: no budget."""
    depth: int = Field(default=0, ge=0)
    """This pod's depth in its tree (0: a pod a person started); set by the parent."""
    role: str = ""
    """For a child: what its parent's agent definition tells it (a system-prompt section)."""
    parent: str = ""
    """For a child: its parent pod's name (``pod ls`` draws the tree; a workspace's pod is
    never one of its children)."""
    start_timeout_s: float = Field(default=30.0, gt=0)
    """Seconds a child pod may take to start listening."""
    child_script: Path | None = None
    """With the scripted provider: the script children answer from (its built-in demo when
    unset); a parent's own script is its own replies, never its children's."""


class AgentConfig(BaseModel):
    """A named kind of child the model may ask for (``task`` with ``agent``)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, defer_build=True)

    description: str = ""
    """When to use it: shown to the model in the ``task`` tool's description."""
    system_prompt: str = ""
    """What the child is told about its role, added to its system prompt."""
    tools: list[str] | None = None
    """The tools it is offered (names; ``mcp__server__*`` globs); all of its parent's when
    unset."""
    model: str | None = None
    """Its model; the parent's when unset."""
    permission_mode: ChildMode | None = None
    """Its permission mode, never wider than its parent's; the parent's when unset."""
