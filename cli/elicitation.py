"""A request for input of an MCP server as a person reads and fills it in, for both clients.

``pod run`` asks a form field by field on the terminal (:mod:`cli.elicitation_prompt`); the
TUI draws it as a card of widgets (:mod:`cli.tui.form_card`). Both say who asks and what each
field takes with the same words, and both turn what was typed into a field's value with
:func:`~orchestrator.adapters.mcp.forms.parse_text` and the pod's own checks, so a value a client lets
through is one the pod takes. Pure: no terminal, no widgets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from orchestrator.adapters.mcp.forms import (
    Form,
    FormError,
    FormField,
    Value,
    check_content,
    parse_text,
)

RawValue = str | bool | list[str] | None
"""What a widget holds: typed text, a checkbox, the chosen value (None: none), the chosen
values."""


def headline(data: Mapping[str, Any], verb: str = "asks") -> str:
    """Who asks, and what: ``MCP server a asks: Your token, please`` (a child pod named)."""
    where = f" (child {data['pod']})" if data.get("pod") else ""
    return f"MCP server {data['server']}{where} {verb}: {data['message']}"


def shown(f: FormField, value: Value) -> str:
    """A value as a person reads it: yes/no, a choice's label, a number as written."""
    labels = dict(f.options)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(labels.get(v, v) for v in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return labels.get(str(value), str(value))


def default_text(f: FormField) -> str:
    """The default as it is typed in (prefilled in a text box); empty when there is none."""
    return "" if f.default is None else shown(f, f.default)


def takes(f: FormField) -> str:
    """What a field takes, in words a person types by: ``text 3–10 characters``, ``yes/no``,
    ``integer 1–10``, ``one of: Red, Green``."""
    if f.kind == "boolean":
        return "yes/no"
    described = f.describe()
    if f.kind == "string" and f.format is None:
        return "text" + described.removeprefix("string")
    return described


def required_error(f: FormField) -> FormError:
    """The pod's words for a required field left empty."""
    return FormError(f"field {f.name!r} is required")


def typed(f: FormField, text: str) -> Value | None:
    """A value typed on a terminal: Enter alone keeps the default (or leaves an optional
    field out, None); raises FormError with the pod's words for one the field refuses."""
    value = parse_text(f, text)
    if value is None:
        value = f.default
    if value is None and f.required:
        raise required_error(f)
    return None if value is None else _checked(f, value)


@dataclass(frozen=True)
class Filled:
    """A form as filled in: the content to send, or why not, by field."""

    content: dict[str, Value] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    """A FormError's message for each field that does not fit; empty when the form is good."""


def collect(form: Form, raw: Mapping[str, RawValue]) -> Filled:
    """What the widgets of a form hold, checked field by field (each error named, so each is
    shown beside its field). An empty box leaves an optional field out (the server uses its
    default) and is an error for a required one."""
    content: dict[str, Value] = {}
    errors: dict[str, str] = {}
    for f in form.fields:
        held = raw.get(f.name)
        try:
            value: Value | None
            if isinstance(held, str) and f.kind in ("string", "number", "integer"):
                value = parse_text(f, held)
            elif isinstance(held, list) and not held and not f.required:
                value = None  # nothing picked of an optional multiple choice: leave it out
            else:
                value = held
            if value is None:
                if f.required:
                    raise required_error(f)
                continue
            content[f.name] = _checked(f, value)
        except FormError as exc:
            errors[f.name] = str(exc)
    return Filled(content if not errors else {}, errors)


def _checked(f: FormField, value: Value) -> Value:
    """The value as the pod will take it (its own check); raises FormError."""
    return check_content(Form((f,)), {f.name: value})[f.name]
