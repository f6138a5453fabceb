"""``${NAME}`` references in config values (MCP servers' headers and env): which names a value
refers to, and the value with them filled in from a given environment. Pure: the caller says
which environment (the pod's own, in :func:`orchestrator.config.mcp.expand`)."""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["referenced_variables", "substitute"]

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def substitute(value: str, environ: Mapping[str, str]) -> str:
    """``${NAME}`` replaced by ``environ``'s ``NAME`` (empty when unset)."""
    return _VARIABLE.sub(lambda match: environ.get(match.group(1), ""), value)


def referenced_variables(value: str) -> list[str]:
    """The names a value refers to with ``${NAME}``."""
    return _VARIABLE.findall(value)
