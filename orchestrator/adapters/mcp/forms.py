"""The forms an MCP server asks a person to fill in (``elicitation/create``, form mode), pure.

MCP allows only a flat object schema: each property a string (optionally an email, URI, date
or date-time, with length bounds), a number or integer (with bounds), a boolean, a single
choice (``enum``, or ``oneOf`` of ``const``/``title``) or a multiple choice (an ``array`` of
such items). :func:`form_fields` reads a schema into :class:`FormField` descriptions a client
builds its form from; :func:`check_content` checks what a person filled in against it (the
pod checks every answer before the server sees it, so one client's bug is an error for that
client, not a malformed answer to the server); :func:`parse_text` turns what a person typed
into a field's value, for text clients (a terminal asks field by field).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Literal

from orchestrator.errors import PodRuntimeError

FieldKind = Literal["string", "number", "integer", "boolean", "choice", "choices"]

Value = str | int | float | bool | list[str]

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


class FormError(PodRuntimeError, ValueError):
    """A schema the pod cannot show as a form, or an answer the schema refuses; the message
    says which field and why."""


@dataclass(frozen=True, slots=True)
class FormField:
    """One field of a form, as a client shows it."""

    name: str
    kind: FieldKind
    title: str
    description: str = ""
    required: bool = False
    default: Value | None = None
    options: tuple[tuple[str, str], ...] = ()
    """For a choice: ``(value, label)`` pairs, in the schema's order."""
    minimum: float | None = None
    maximum: float | None = None
    """Bounds: of a number's value, a string's length, or how many choices are picked."""
    format: str | None = None
    """``email``, ``uri``, ``date`` or ``date-time`` for a string."""

    def describe(self) -> str:
        """What the field takes, in a few words (``integer 1–10``, ``one of: a, b``)."""
        if self.kind in ("choice", "choices"):
            labels = ", ".join(label for _, label in self.options)
            return ("one of: " if self.kind == "choice" else "any of: ") + labels
        text = self.format or self.kind
        low, high = self.minimum, self.maximum
        if low is not None or high is not None:
            unit = " characters" if self.kind == "string" else ""
            text += f" {_num(low) if low is not None else ''}–{_num(high) if high is not None else ''}{unit}"
        return text


@dataclass(frozen=True, slots=True)
class Form:
    """A server's form: its fields in the schema's order."""

    fields: tuple[FormField, ...] = field(default=())

    def defaults(self) -> dict[str, Value]:
        """Every default the schema gives, by field."""
        return {f.name: f.default for f in self.fields if f.default is not None}


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _options(schema: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """The choices of a single-select schema (or of a multi-select's items), or ()."""
    one_of = schema.get("oneOf") or schema.get("anyOf")
    if isinstance(one_of, list):
        pairs = []
        for option in one_of:
            if not isinstance(option, dict) or not isinstance(option.get("const"), str):
                raise FormError("a choice must be an object with a string const")
            pairs.append((option["const"], str(option.get("title") or option["const"])))
        return tuple(pairs)
    enum = schema.get("enum")
    if isinstance(enum, list):
        if not all(isinstance(value, str) for value in enum):
            raise FormError("choices must be strings")
        names = schema.get("enumNames")
        labels = names if isinstance(names, list) and len(names) == len(enum) else enum
        return tuple((value, str(label)) for value, label in zip(enum, labels, strict=True))
    return ()


def _field(name: str, schema: Any, required: bool) -> FormField:
    if not isinstance(schema, dict):
        raise FormError(f"field {name!r}: its schema is not an object")
    kind = schema.get("type")
    title = str(schema.get("title") or name)
    common: dict[str, Any] = {
        "name": name,
        "title": title,
        "description": str(schema.get("description") or ""),
        "required": required,
        "default": schema.get("default"),
    }
    if kind == "array":
        items = schema.get("items")
        options = _options(items) if isinstance(items, dict) else ()
        if not options:
            raise FormError(f"field {name!r}: an array must list its choices")
        return FormField(
            kind="choices",
            options=options,
            minimum=schema.get("minItems"),
            maximum=schema.get("maxItems"),
            **common,
        )
    if kind == "string":
        options = _options(schema)
        if options:
            return FormField(kind="choice", options=options, **common)
        return FormField(
            kind="string",
            minimum=schema.get("minLength"),
            maximum=schema.get("maxLength"),
            format=schema.get("format"),
            **common,
        )
    if kind in ("number", "integer"):
        return FormField(
            kind=kind, minimum=schema.get("minimum"), maximum=schema.get("maximum"), **common
        )
    if kind == "boolean":
        return FormField(kind="boolean", **common)
    raise FormError(f"field {name!r}: type {kind!r} is not one a form can ask for")


def form_fields(schema: dict[str, Any]) -> Form:
    """The form a requested schema describes; raises FormError for one MCP does not allow
    (nested objects, a type a form cannot ask for)."""
    if schema.get("type", "object") != "object":
        raise FormError("the requested schema is not an object")
    properties = schema.get("properties") or {}
    if not isinstance(properties, dict):
        raise FormError("the requested schema's properties are not an object")
    required = schema.get("required") or []
    if not isinstance(required, list):
        raise FormError("the requested schema's required is not a list")
    unknown = [name for name in required if name not in properties]
    if unknown:
        raise FormError(f"required field {unknown[0]!r} is not among the properties")
    return Form(tuple(_field(str(name), sub, name in required) for name, sub in properties.items()))


def _check(f: FormField, value: Any) -> Value:
    """The value if the field takes it; raises FormError saying why not."""
    where = f"field {f.name!r}"
    if f.kind == "boolean":
        if not isinstance(value, bool):
            raise FormError(f"{where} takes true or false")
        return value
    if f.kind in ("number", "integer"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise FormError(f"{where} takes a number")
        if not math.isfinite(value):
            raise FormError(f"{where} takes a finite number")
        if f.kind == "integer" and not float(value).is_integer():
            raise FormError(f"{where} takes a whole number")
        _bounds(where, float(value), f, "")
        return int(value) if f.kind == "integer" else value
    values = [option for option, _ in f.options]
    if f.kind == "choice":
        if value not in values:
            raise FormError(f"{where} takes one of {', '.join(values)}")
        return str(value)
    if f.kind == "choices":
        if not isinstance(value, list) or not all(v in values for v in value):
            raise FormError(f"{where} takes a list of {', '.join(values)}")
        _bounds(where, len(value), f, " choices")
        return [str(v) for v in value]
    if not isinstance(value, str):
        raise FormError(f"{where} takes text")
    _bounds(where, len(value), f, " characters")
    _check_format(where, f.format, value)
    return value


def _bounds(where: str, number: float, f: FormField, unit: str) -> None:
    if f.minimum is not None and number < f.minimum:
        raise FormError(f"{where} takes at least {_num(f.minimum)}{unit}")
    if f.maximum is not None and number > f.maximum:
        raise FormError(f"{where} takes at most {_num(f.maximum)}{unit}")


def _check_format(where: str, fmt: str | None, value: str) -> None:
    try:
        if fmt == "email" and not _EMAIL.match(value):
            raise ValueError
        if fmt == "uri" and not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$", value):
            raise ValueError
        if fmt == "date":
            date.fromisoformat(value)
        if fmt == "date-time":
            datetime.fromisoformat(value)
    except ValueError:
        raise FormError(f"{where} takes {'an' if fmt in ('email', 'uri') else 'a'} {fmt}") from None


def check_content(form: Form, content: dict[str, Any]) -> dict[str, Value]:
    """What a person filled in, checked against the form: every required field there, every
    value of its field's type and bounds, no field the form does not have. Raises FormError."""
    names = {f.name for f in form.fields}
    extra = sorted(set(content) - names)
    if extra:
        raise FormError(f"the form has no field {extra[0]!r}")
    out: dict[str, Value] = {}
    for f in form.fields:
        if f.name not in content or content[f.name] is None:
            if f.required:
                raise FormError(f"field {f.name!r} is required")
            continue
        out[f.name] = _check(f, content[f.name])
    return out


def parse_text(f: FormField, text: str) -> Value | None:
    """What a person typed for a field, as its value (None: left empty); raises FormError.

    Numbers as written; booleans as y/yes/true/1 or n/no/false/0; a choice by its value, its
    label or its number in the list; several choices separated by commas.
    """
    text = text.strip()
    if not text:
        return None
    if f.kind == "boolean":
        lowered = text.lower()
        if lowered in ("y", "yes", "true", "1"):
            return True
        if lowered in ("n", "no", "false", "0"):
            return False
        raise FormError(f"field {f.name!r} takes yes or no")
    if f.kind in ("number", "integer"):
        try:
            number = float(text)
        except ValueError:
            raise FormError(f"field {f.name!r} takes a number") from None
        return _check(f, int(number) if f.kind == "integer" and number.is_integer() else number)
    if f.kind == "choice":
        return _check(f, _pick(f, text))
    if f.kind == "choices":
        return _check(f, [_pick(f, part) for part in text.split(",") if part.strip()])
    return _check(f, text)


def _pick(f: FormField, text: str) -> str:
    text = text.strip()
    for number, (value, label) in enumerate(f.options, start=1):
        if text in (value, label, str(number)):
            return value
    return text  # refused by the check, which names the choices
