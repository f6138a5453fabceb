"""Grants: the settings that widen what the model can reach, and keeping them out of a
workspace's own config file.

A workspace's ``.pod/config.toml`` travels with the repository being worked on (a clone can
carry one), so it may narrow what the pod does but never widen it: :func:`strip_workspace_grants`
takes out what it may not give, and :func:`refused_grants_warning` tells the user where such a
setting belongs instead. Pure functions over the parsed TOML.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from orchestrator.permissions import WIDENING_MODES

GRANTS: dict[str, str | None] = {
    "allow_bash": "--allow-bash",
    "read_roots": "--read-root PATH",
    "write_roots": "--write-root PATH",
    "memory.workspace_root": None,
    "session": "--session PATH",
    "socket": "--socket PATH",
    "parent_socket": "--parent-socket PATH",
    "tool_env_allow": None,
    "tool_env": None,
    "permissions.mode": "--permission-mode",
    "permissions.allow": "--permission-mode yolo, or [permissions] allow in your own config",
    "mcp.servers.<name>.command": None,
    "mcp.servers.<name>.url": None,
}
"""Keys a workspace's config cannot widen, and the command-line option that grants each."""


def _inside(path: str, workspace: Path) -> Path | None:
    """``path`` (relative to the workspace) made absolute, or None when it leads outside."""
    resolved = (workspace / path).resolve()
    return resolved if resolved == workspace or workspace in resolved.parents else None


def _contained(value: Any, workspace: Path) -> tuple[bool, Any]:
    """(may the workspace set it, the value to use) for one path-valued grant.

    Values of the wrong type are passed on untouched so validation names them.
    """
    if isinstance(value, str):
        inside = _inside(value, workspace)
        return inside is not None, str(inside) if inside is not None else value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        paths = [_inside(v, workspace) for v in value]
        if any(p is None for p in paths):
            return False, value
        return True, [str(p) for p in paths]
    return True, value


def strip_workspace_grants(
    data: Mapping[str, Any], workspace: Path
) -> tuple[dict[str, Any], list[str]]:
    """A workspace file's settings without the grants it may not give, and those grants' keys.

    ``workspace`` must be resolved. Kept paths come back absolute.
    """
    kept = dict(data)
    refused: list[str] = []
    if "allow_bash" in kept and kept["allow_bash"] is not False:
        del kept["allow_bash"]
        refused.append("allow_bash")
    for key in ("read_roots", "write_roots", "session", "socket", "parent_socket"):
        if key in kept:
            allowed, kept[key] = _contained(kept[key], workspace)
            if not allowed:
                del kept[key]
                refused.append(key)
    for key in ("tool_env_allow", "tool_env"):
        # What reaches tool processes (a secret by name, a PATH or LD_PRELOAD) is the
        # user's call, never a cloned repository's.
        if kept.get(key):
            del kept[key]
            refused.append(key)
    permissions = kept.get("permissions")
    if isinstance(permissions, Mapping):
        # A repository may narrow what runs without asking (deny, ask, read-only), never widen.
        permissions = dict(permissions)
        if permissions.get("mode") in WIDENING_MODES:
            del permissions["mode"]
            refused.append("permissions.mode")
        if permissions.get("allow"):
            del permissions["allow"]
            refused.append("permissions.allow")
        kept["permissions"] = permissions
    if kept.get("mcp"):
        # An MCP server is a program the pod runs: a cloned repository does not get to add one.
        del kept["mcp"]
        refused.append("mcp.servers")
    memory = kept.get("memory")
    if isinstance(memory, Mapping) and "workspace_root" in memory:
        memory = dict(memory)
        allowed, memory["workspace_root"] = _contained(memory["workspace_root"], workspace)
        if not allowed:
            del memory["workspace_root"]
            refused.append("memory.workspace_root")
        kept["memory"] = memory
    return kept, refused


def refused_grants_warning(path: Path, keys: list[str], user_file: Path) -> str:
    """The start-up alert for grants a workspace's config tried to give."""
    flags = [flag for key in keys if (flag := GRANTS.get(key))]
    how = (
        f"pass {', '.join(flags)} on the command line or set them in {user_file}"
        if flags
        else f"set them in {user_file}"
    )
    return (
        f"{path} sets {', '.join(keys)}, which would widen what the model can reach; a "
        f"workspace's config cannot grant that, so they are ignored. To grant them, {how}."
    )
