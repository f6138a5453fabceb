"""Paths whose change can run code later: writing them always asks, whatever the rules say.

A write to ``.git/config`` (an ``fsmonitor`` or ``core.pager`` command), a git hook, an
``.envrc`` or an editor's task file is code execution deferred to the next ``git status``,
``cd`` or build. So in every mode but ``yolo`` such a write asks a person, even where an allow
rule, an "always" answer or ``accept-edits`` would let it through (Codex keeps ``.git`` read-only
the same way). The sandbox (issue 24) mounts the same paths read-only.
"""

from __future__ import annotations

from collections.abc import Iterable

PROTECTED_DIRS: tuple[str, ...] = (
    ".git",  # config (fsmonitor, pager, aliases), hooks, info/attributes
    ".hg",  # hgrc hooks
    ".svn",
    ".pod",  # this pod's own config: permissions, MCP servers
    ".husky",  # git hooks managed by husky
    ".githooks",  # the usual core.hooksPath
    ".vscode",  # tasks.json, settings.json (terminal profiles, tasks on folder open)
    ".idea",  # run configurations, startup tasks
    ".devcontainer",  # postCreateCommand and friends
    ".claude",  # Claude Code's settings and hooks
    ".codex",
    ".cursor",
    ".direnv",
)
"""Directories, at any depth, whose content configures commands another tool runs."""

PROTECTED_FILES: tuple[str, ...] = (
    ".envrc",  # direnv runs it on cd
    ".pre-commit-config.yaml",  # pre-commit installs and runs these hooks
    ".gitmodules",
    ".npmrc",  # script-shell, git, node-options
    ".yarnrc",
    ".yarnrc.yml",  # yarnPath runs a file
    ".pnpmfile.cjs",
    ".mcp.json",  # MCP servers other agents start
    ".bashrc",
    ".profile",
    ".zshrc",
)
"""File names, at any depth, read by a tool that runs what they say."""


def protected_reason(rule_path: str, protected_roots: Iterable[str] = ()) -> str | None:
    """Why writing ``rule_path`` must ask (a workspace-relative or absolute canonical path),
    or None when it is an ordinary path. ``protected_roots`` are absolute directories that are
    protected as a whole (the pod's state and session directories)."""
    for root in protected_roots:
        if rule_path == root or rule_path.startswith(root.rstrip("/") + "/"):
            return f"{root} holds the pod's own state"
    parts = [p.lower() for p in rule_path.split("/") if p]
    for part in parts[:-1]:
        if part in PROTECTED_DIRS:
            return f"{part}/ configures commands other tools run"
    if parts and parts[-1] in PROTECTED_DIRS:
        return f"{parts[-1]}/ configures commands other tools run"
    if parts and parts[-1] in PROTECTED_FILES:
        return f"{parts[-1]} configures commands other tools run"
    return None


def protected_names() -> tuple[str, ...]:
    """Every protected directory and file name (for the sandbox's read-only binds)."""
    return (*PROTECTED_DIRS, *PROTECTED_FILES)
