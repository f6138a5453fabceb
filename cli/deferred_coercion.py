"""Typer's conversion of a parameter, built only when a value needs it.

The Typer in use converts every parameter a command processes through a pydantic
``TypeAdapter``, and builds it before it looks at the value: a parameter left unset (``None``)
costs an adapter whose answer is ``None`` anyway, and the first one costs the import of
pydantic (0.05–0.1 s). ``pod run --help`` processed the root group's unset ``--help`` and
completion flags that way, and ``pod run "hello"`` its ten unset options.

:func:`defer_coercion` gives each such parameter a stand-in from Typer's own coercion class:
Typer's code still decides what an unset value becomes (``None``, or ``()`` for a parameter
taking many), and the first value that needs converting builds Typer's own converter, which
converts it and every later value. What a value becomes, and every error message, is
Typer's. The stand-in uses Typer's private names; if a Typer release moves them, this does
nothing and the parameters convert as before (``tests/cli/test_startup_imports.py`` then
fails on the import of pydantic by ``--help``, so it does not go unseen).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["defer_coercion"]

try:
    from typer._coercion import RuntimeParam, build_runtime_param
except ImportError:  # a Typer without these names: convert as it does
    RuntimeParam = None  # type: ignore[assignment,misc]


if RuntimeParam is not None:

    @dataclass(frozen=True)
    class _Deferred(RuntimeParam):
        """Typer's converter for one parameter, built on the first value to convert."""

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            converter = build_runtime_param(param.type_descriptor)
            param._runtime_param = converter  # every later value goes straight to it
            return converter._coerce_value(value, param=param, ctx=ctx)


def defer_coercion(params: Iterable[Any]) -> None:
    """Give each Typer parameter in ``params`` that has no converter yet a :class:`_Deferred`
    one (see the module's docstring); anything else is left as it is."""
    if RuntimeParam is None:
        return
    for param in params:
        if getattr(param, "_runtime_param", False) is not None:
            continue  # not Typer's parameter, or its converter exists
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is None:
            continue
        param._runtime_param = _Deferred(
            parameter_info=descriptor.parameter_info, annotation=descriptor.annotation
        )
