"""Tool arguments as pydantic models: one model gives both the schema the model reads and the check.

Each built-in tool declares a :class:`ToolArgs` model and derives from :class:`TypedTool`. Its
``input_schema`` is :func:`schema_of` that model: the plain JSON schema the Messages API
wants, with every key in a fixed order so each request is byte-identical (prompt caching
depends on it). ``run`` validates the call's JSON against the same model; a mistake becomes a
:class:`ToolError` that names the argument and says what it must be.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from orchestrator.capabilities.tools.base import AcpKind, ToolContext, ToolError, ToolOutput

A = TypeVar("A", bound="ToolArgs")

_KEY_ORDER = (
    "type",
    "enum",
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "minLength",
    "default",
    "description",
)
"""Property keys in the order they are sent; any other key follows, alphabetically."""

_VALUE_CHARS = 60
"""A wrong value is quoted in an error up to this length."""


class ToolArgs(BaseModel):
    """The arguments of one tool: JSON types taken strictly, unknown names refused.

    Strict, because the model should learn that ``"5"`` is not a number rather than have it
    guessed; the one leniency is that JSON has a single number type, so ``10.0`` is the
    integer 10 (``10.5`` and ``true`` are not). A ``null`` counts as leaving the argument out.
    """

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {key: value for key, value in data.items() if value is not None}
        return data

    @field_validator("*", mode="before")
    @classmethod
    def _whole_floats_are_integers(cls, value: Any) -> Any:
        # Harmless for number fields: strict floats accept an int.
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value


def schema_of(
    model: type[ToolArgs], overrides: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    """The Messages API ``input_schema`` of ``model``; ``overrides`` replace keys per property.

    Pydantic's ``title`` keys go, an optional argument is its plain type (leaving it out is how
    it is not given), and keys come in a fixed order. Every property must have a description:
    the model has nothing else to go on.
    """
    raw = model.model_json_schema()
    if "$defs" in raw:
        raise TypeError(f"{model.__name__}: tool arguments must be flat JSON values")
    properties: dict[str, Any] = {}
    for name, spec in raw["properties"].items():
        prop = _plain(spec)
        prop.update((overrides or {}).get(name, {}))
        if not prop.get("description"):
            raise TypeError(f"{model.__name__}.{name} has no description")
        properties[name] = _ordered(prop)
    unknown = set(overrides or {}) - set(properties)
    if unknown:
        raise TypeError(f"{model.__name__} has no argument {sorted(unknown)[0]!r}")
    return {
        "type": "object",
        "properties": properties,
        "required": list(raw.get("required", [])),
        "additionalProperties": False,
    }


_SCHEMAS: dict[tuple[type[ToolArgs], str], dict[str, Any]] = {}


def shared_schema(
    model: type[ToolArgs], overrides: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    """:func:`schema_of`, worked out once per model and overrides and shared by every tool
    built with them: a host building hundreds of pods builds each schema once, holds it once,
    and the request-size estimate (which caches per schema object) hits for all of them."""
    key = (model, json.dumps(overrides or {}, sort_keys=True, default=str))
    schema = _SCHEMAS.get(key)
    if schema is None:
        schema = _SCHEMAS[key] = schema_of(model, overrides)
    return schema


def _plain(spec: Mapping[str, Any]) -> dict[str, Any]:
    """One property without pydantic's title and without the ``null`` of an optional value."""
    prop = {key: value for key, value in spec.items() if key != "title"}
    options = prop.get("anyOf")
    if options is not None:
        kept = [option for option in options if option != {"type": "null"}]
        if len(kept) == 1:
            del prop["anyOf"]
            prop = {**kept[0], **prop}
            if prop.get("default", ...) is None:
                del prop["default"]
    return prop


def _ordered(prop: Mapping[str, Any]) -> dict[str, Any]:
    known = [key for key in _KEY_ORDER if key in prop]
    rest = sorted(key for key in prop if key not in _KEY_ORDER)
    return {key: prop[key] for key in (*known, *rest)}


def parse_args(model: type[A], args: Any, schema: Mapping[str, Any] | None = None) -> A:
    """``args`` validated against ``model``; otherwise a ToolError the model can act on.

    ``schema`` is the tool's input schema (default: derived from ``model``); the error says
    what an argument must be in the terms the model was given there.
    """
    try:
        return model.model_validate(args)
    except ValidationError as exc:
        properties = (schema or schema_of(model))["properties"]
        raise ToolError("; ".join(_explain(e, properties) for e in exc.errors())) from None


def _explain(error: ErrorDetails, properties: Mapping[str, Any]) -> str:
    """One validation error in words: which argument, what it must be, what it was."""
    kind = error["type"]
    value = error["input"]
    if not error["loc"]:
        return f"the arguments must be a JSON object, got {_type_name(value)}"
    name = str(error["loc"][0])
    if kind == "missing":
        return f"missing required argument {name!r}"
    if kind == "extra_forbidden":
        known = ", ".join(properties)
        return f"unknown argument {name!r}; the arguments are: {known}"
    limits = error.get("ctx") or {}
    expected = _expected(properties.get(name, {}))
    if kind == "string_type":
        return f"argument {name!r} must be {expected}, got {_type_name(value)}"
    if kind == "greater_than_equal":
        return f"argument {name!r} must be at least {limits['ge']}, got {_shown(value)}"
    if kind == "less_than_equal":
        return f"argument {name!r} must be at most {limits['le']}, got {_shown(value)}"
    if kind == "greater_than" and limits.get("gt") != 0:
        return f"argument {name!r} must be greater than {limits['gt']}, got {_shown(value)}"
    if expected is not None:
        # Wrong type, fractional integer, blank string, a number not above zero: the
        # expectation (``a positive number``, ``a non-empty string``) says it all.
        return f"argument {name!r} must be {expected}, got {_shown(value)}"
    return f"argument {name!r}: {error['msg']}"


def _expected(prop: Mapping[str, Any]) -> str | None:
    """What a value of this property must be, as the schema the model read says it."""
    match prop.get("type"):
        case "string":
            return "a non-empty string" if prop.get("minLength", 0) >= 1 else "a string"
        case "integer":
            return "an integer"
        case "number":
            return "a positive number" if prop.get("exclusiveMinimum") == 0 else "a number"
        case "boolean":
            return "true or false"
    return None


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _VALUE_CHARS else f"{text[:_VALUE_CHARS]}…"


class TypedTool(Generic[A]):
    """A built-in tool whose arguments are the model ``args_model``.

    ``run`` (the :class:`~orchestrator.capabilities.tools.base.Tool` contract) validates the call's JSON
    and hands the typed arguments to :meth:`execute`, which the tool implements.
    """

    name: str
    description: str
    side_effects: bool
    args_model: type[A]
    claude_code_name: ClassVar[str | None]
    """The Claude Code tool this one stands for (``Bash``, ``Read``…): hooks written for
    Claude Code match and read a call of it under that name (:mod:`~orchestrator.capabilities.hooks.dialect`);
    None: hooks see the tool under its own name. Every built-in tool says, even when None."""
    acp_kind: ClassVar[AcpKind]
    """How an ACP editor draws a call of it (:data:`~orchestrator.capabilities.tools.base.AcpKind`);
    every built-in tool says, even when ``other``."""

    def __init__(self, *, schema_overrides: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.input_schema: dict[str, Any] = shared_schema(self.args_model, schema_overrides)
        """Sent with every request; per instance, as limits may come from the config (shared
        between instances with the same limits: never change it)."""

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """Validate ``args`` and run the tool with them."""
        parsed = parse_args(self.args_model, args, self.input_schema)
        return await self.execute(parsed, ctx)

    async def execute(self, args: A, ctx: ToolContext) -> ToolOutput:
        """Do the work with validated arguments."""
        raise NotImplementedError
