"""Loading a pod's configuration: defaults, the user's config, the workspace's config, the
command line, each source overriding the ones before it key by key (the order and the grants a
workspace's file may not give are told in :mod:`orchestrator.config.model`).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from orchestrator.config.grants import refused_grants_warning, strip_workspace_grants
from orchestrator.config.model import PodConfig
from orchestrator.config.paths import config_file, user_config_file
from orchestrator.config.regular_file import CONFIG_MAX_BYTES, read_regular
from orchestrator.errors import SetupError

__all__ = ["CONFIG_MAX_BYTES", "ConfigError", "load_config"]


class ConfigError(SetupError):
    """The configuration file or an option is invalid; the message names the file and field."""


def _read_toml(path: Path) -> dict[str, Any]:
    if not path.exists() and not path.is_symlink():
        return {}
    try:
        # A FIFO or a device at the path (a cloned repository's .pod/config.toml can be one)
        # is refused at once, not read forever.
        return tomllib.loads(read_regular(path, max_bytes=CONFIG_MAX_BYTES).decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it: {exc.strerror}") from None


def _merge(base: dict[str, Any], top: Mapping[str, Any], *, path: str = "") -> dict[str, Any]:
    """``top`` over ``base``, tables merged key by key; ``deny`` and ``ask`` rules add up
    (a later file may add restrictions, never drop an earlier file's)."""
    merged = dict(base)
    for key, value in top.items():
        below = merged.get(key)
        where = f"{path}.{key}" if path else key
        if isinstance(below, dict) and isinstance(value, Mapping):
            merged[key] = _merge(below, value, path=where)
        elif where in _ADDITIVE and isinstance(below, list) and isinstance(value, list):
            merged[key] = [*below, *(v for v in value if v not in below)]
        else:
            merged[key] = value
    return merged


_BUDGETS = ("budget_usd", "turn_budget_usd")

_ADDITIVE = frozenset({"permissions.deny", "permissions.ask", "web.blocked_domains"})


def _server_names(data: Mapping[str, Any]) -> list[str]:
    """The MCP servers a config's data names (those a workspace may put in the sandbox)."""
    mcp = data.get("mcp")
    servers = mcp.get("servers") if isinstance(mcp, Mapping) else None
    return list(servers) if isinstance(servers, Mapping) else []


def _table(data: Mapping[str, Any], key: str) -> dict[str, Any]:
    table = data.get(key)
    return dict(table) if isinstance(table, Mapping) else {}


def load_config(workspace: Path, **overrides: Any) -> PodConfig:
    """Defaults, the user's file, the workspace's file (no grants), then non-None overrides.

    Grants the workspace's file tried to give are listed in :attr:`PodConfig.load_warnings`.
    """
    ws = workspace.resolve()
    user_path = user_config_file()
    ws_path = config_file(workspace)
    user_data = _read_toml(user_path)
    given = {k: v for k, v in overrides.items() if v is not None}
    servers = {*_server_names(user_data), *_server_names(given)}
    user_web = _merge(_table(user_data, "web"), _table(given, "web"))
    user_skills = _merge(_table(user_data, "skills"), _table(given, "skills"))
    user_budgets = _merge(
        {k: user_data[k] for k in _BUDGETS if k in user_data},
        {k: given[k] for k in _BUDGETS if k in given},
    )
    ws_data, refused = strip_workspace_grants(
        _read_toml(ws_path),
        ws,
        servers=servers,
        web=user_web,
        skills=user_skills,
        budgets=user_budgets,
    )
    data = _merge(_merge(user_data, ws_data), given)
    data["workspace"] = ws
    try:
        config = PodConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        # Not the union member a value failed as (``thinking.literal['auto',…]``): the key.
        where = ".".join(str(p) for p in first["loc"] if "[" not in str(p))
        top = str(first["loc"][0]) if first["loc"] else ""
        source = (
            "command line"
            if top in given
            else str(ws_path)
            if top in ws_data
            else str(user_path)
            if top in user_data
            else "config"
        )
        raise ConfigError(f"{source}: {where}: {first['msg']}") from None
    if refused:
        config.load_warnings.append(refused_grants_warning(ws_path, refused, user_path))
    return config
