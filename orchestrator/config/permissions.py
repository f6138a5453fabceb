"""``[permissions]``: which tool calls run, ask a person first, or are refused (docs/permissions.md).

The table and the syntax of its rules live here, with the rest of the config; what a rule
matches and the decision itself are :mod:`orchestrator.capabilities.permissions`. Reading a
config never loads the shell parser the policy uses to take command lines apart.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from orchestrator.core.web_targets import domain_pattern

__all__ = [
    "FETCH_TOOL_NAMES",
    "MODES",
    "MODE_REACH",
    "WIDENING_MODES",
    "Mode",
    "PermissionsConfig",
    "mode_ceiling",
    "mode_refusal",
    "split_rule",
]

Mode = Literal["default", "accept-edits", "yolo", "read-only", "plan"]

MODES: tuple[Mode, ...] = ("default", "accept-edits", "plan", "yolo", "read-only")
"""Every mode, in the order the docs list them (a test checks each front-end knows them all)."""

WIDENING_MODES: frozenset[Mode] = frozenset({"accept-edits", "yolo"})
"""Modes that allow more than ``default``: never taken from a workspace's own config."""

MODE_REACH: dict[Mode, int] = {
    "read-only": 0,
    "plan": 1,
    "default": 2,
    "accept-edits": 3,
    "yolo": 4,
}
"""Modes from narrowest to widest. ``plan`` runs no more than ``read-only`` does, but the
model can ask a person to leave it (``exit_plan_mode``): it sits between ``read-only`` and
``default``."""


def mode_ceiling(configured: Mode) -> Mode:
    """The widest mode a running pod configured with ``configured`` may switch to.

    The configured mode is the user's grant (a workspace's file can only narrow it); a pod
    configured in ``plan`` plans first and then works in ``default``, so ``default`` is its
    ceiling.
    """
    return "default" if configured == "plan" else configured


def mode_refusal(mode: Mode, configured: Mode) -> str | None:
    """Why a running pod configured with ``configured`` may not switch to ``mode``; None when
    it may."""
    ceiling = mode_ceiling(configured)
    if MODE_REACH[mode] <= MODE_REACH[ceiling]:
        return None
    return (
        f"mode {mode!r} is wider than this pod's configuration allows ({ceiling!r}): start the "
        f"pod with --permission-mode {mode} or set [permissions] mode in your own config"
    )


FETCH_TOOL_NAMES = frozenset({"web_fetch", "webfetch"})
"""How a rule names the ``web_fetch`` tool, lower-cased: its own name or Claude Code's
``WebFetch``. Its subject is ``domain:<pattern>`` (:mod:`orchestrator.core.web_targets`)."""


def split_rule(text: str) -> tuple[str, str | None]:
    """A rule's tool glob and subject pattern: ``tool`` or ``tool(pattern)``; ValueError when
    it is neither."""
    text = text.strip()
    if "(" in text:
        if not text.endswith(")"):
            raise ValueError(f"rule {text!r}: a pattern must close with ')'")
        tool, _, rest = text.partition("(")
        subject: str | None = rest[:-1]
    else:
        tool, subject = text, None
    if not tool.strip():
        raise ValueError(f"rule {text!r} names no tool")
    return tool.strip(), subject


class PermissionsConfig(BaseModel):
    """The ``[permissions]`` table of a config file."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, defer_build=True)

    mode: Mode = "default"
    """``default`` asks before bash and edits, ``accept-edits`` allows edits, ``yolo`` allows
    everything, ``read-only`` denies writes and bash, whatever allow rules say, ``plan``
    refuses them without asking until a person approves the model's plan (docs/permissions.md,
    docs/plan-mode.md). It is also the widest mode a running pod may be switched to."""
    allow: list[str] = Field(default_factory=list)
    """Rules that allow without asking (e.g. ``"bash(git status)"``)."""
    ask: list[str] = Field(default_factory=list)
    """Rules that ask even where the mode would allow."""
    deny: list[str] = Field(default_factory=list)
    """Rules that deny, whatever else says (e.g. ``"read(.env)"``, ``"bash(rm:*)"``)."""
    sandboxed_bash: Literal["allow", "ask"] | None = None
    """A ``bash`` command that runs in the sandbox: ``allow`` runs it without asking,
    ``ask`` asks as the mode says. Unset: ``allow`` in ``accept-edits`` (and ``yolo``), ``ask``
    in ``default``. A command that leaves the sandbox (``sandbox: false``) always asks."""

    @field_validator("allow", "ask", "deny")
    @classmethod
    def _rules_parse(cls, rules: list[str]) -> list[str]:
        for rule in rules:
            tool, subject = split_rule(rule)
            if subject is not None and tool.lower() in FETCH_TOOL_NAMES:
                try:
                    domain_pattern(subject)
                except ValueError as exc:
                    raise ValueError(f"rule {rule!r}: {exc}") from None
        return rules
