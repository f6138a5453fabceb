"""Reading a tool call's JSON arguments, with errors the model can act on."""

from __future__ import annotations

from typing import Any

from orchestrator.tools.base import ToolError


def str_arg(args: dict[str, Any], name: str, default: str | None = None) -> str:
    """A string argument; required when ``default`` is None."""
    value = args.get(name, default)
    if value is None:
        raise ToolError(f"missing required argument {name!r}")
    if not isinstance(value, str):
        raise ToolError(f"argument {name!r} must be a string, got {type(value).__name__}")
    return value


def int_arg(args: dict[str, Any], name: str, *, minimum: int = 1) -> int | None:
    """An optional integer argument of at least ``minimum``."""
    value = args.get(name)
    if value is None:
        return None
    # JSON has one number type: accept 10.0, refuse 10.5 and booleans.
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(f"argument {name!r} must be an integer, got {value!r}")
    if value < minimum:
        raise ToolError(f"argument {name!r} must be at least {minimum}, got {value}")
    return value


def bool_arg(args: dict[str, Any], name: str, default: bool = False) -> bool:
    """An optional boolean argument."""
    value = args.get(name, default)
    if not isinstance(value, bool):
        raise ToolError(f"argument {name!r} must be true or false, got {value!r}")
    return value
