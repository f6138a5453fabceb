"""Forms of requests for input: schemas read into fields, answers checked, typed text parsed."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.adapters.mcp.forms import Form, FormError, check_content, form_fields, parse_text

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name", "minLength": 2, "maxLength": 5},
        "email": {"type": "string", "format": "email"},
        "age": {"type": "integer", "minimum": 18, "maximum": 120, "default": 30},
        "ratio": {"type": "number"},
        "ok": {"type": "boolean", "default": False},
        "size": {"type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"]},
        "team": {"type": "string", "oneOf": [{"const": "a", "title": "Alpha"}, {"const": "b"}]},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}, "maxItems": 1},
        "born": {"type": "string", "format": "date"},
    },
    "required": ["name", "size"],
}


@pytest.fixture
def form() -> Form:
    return form_fields(SCHEMA)


def test_a_schema_becomes_fields_in_its_order_with_kinds_labels_and_defaults(form: Form) -> None:
    assert [(f.name, f.kind, f.required) for f in form.fields] == [
        ("name", "string", True),
        ("email", "string", False),
        ("age", "integer", False),
        ("ratio", "number", False),
        ("ok", "boolean", False),
        ("size", "choice", True),
        ("team", "choice", False),
        ("tags", "choices", False),
        ("born", "string", False),
    ]
    by_name = {f.name: f for f in form.fields}
    assert by_name["name"].title == "Your name"
    assert by_name["size"].options == (("s", "Small"), ("m", "Medium"))
    assert by_name["team"].options == (("a", "Alpha"), ("b", "b"))
    assert form.defaults() == {"age": 30, "ok": False}
    assert by_name["name"].describe() == "string 2–5 characters"
    assert by_name["age"].describe() == "integer 18–120"
    assert by_name["team"].describe() == "one of: Alpha, b"


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ({"type": "array"}, "not an object"),
        ({"properties": {"a": {"type": "object"}}}, "type 'object' is not one a form can ask for"),
        ({"properties": {"a": {"type": "array", "items": {"type": "string"}}}}, "must list"),
        ({"properties": {}, "required": ["ghost"]}, "'ghost' is not among the properties"),
        ({"properties": {"a": {"type": "string", "enum": [1, 2]}}}, "choices must be strings"),
    ],
)
def test_a_schema_mcp_does_not_allow_is_refused_saying_why(
    schema: dict[str, Any], why: str
) -> None:
    with pytest.raises(FormError, match=why):
        form_fields(schema)


def test_an_answer_that_fits_is_kept_with_its_types(form: Form) -> None:
    content = {"name": "Ann", "size": "m", "age": 40.0, "tags": ["y"], "born": "2000-01-31"}
    assert check_content(form, content) == {
        "name": "Ann",
        "age": 40,
        "size": "m",
        "tags": ["y"],
        "born": "2000-01-31",
    }


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ({"size": "s"}, "field 'name' is required"),
        ({"name": "Ann", "size": "xl"}, "field 'size' takes one of s, m"),
        ({"name": "A", "size": "s"}, "at least 2 characters"),
        ({"name": "Annabel", "size": "s"}, "at most 5 characters"),
        ({"name": "Ann", "size": "s", "age": 17}, "field 'age' takes at least 18"),
        ({"name": "Ann", "size": "s", "age": 20.5}, "field 'age' takes a whole number"),
        ({"name": "Ann", "size": "s", "age": True}, "field 'age' takes a number"),
        ({"name": "Ann", "size": "s", "ok": "yes"}, "field 'ok' takes true or false"),
        ({"name": "Ann", "size": "s", "email": "nope"}, "field 'email' takes an email"),
        ({"name": "Ann", "size": "s", "born": "31/01/2000"}, "field 'born' takes a date"),
        ({"name": "Ann", "size": "s", "tags": ["x", "y"]}, "at most 1 choices"),
        ({"name": "Ann", "size": "s", "color": "red"}, "the form has no field 'color'"),
    ],
)
def test_an_answer_that_does_not_fit_is_refused_naming_the_field(
    form: Form, content: dict[str, Any], why: str
) -> None:
    with pytest.raises(FormError, match=why):
        check_content(form, content)


def test_typed_text_becomes_a_fields_value(form: Form) -> None:
    by_name = {f.name: f for f in form.fields}
    assert parse_text(by_name["age"], " 42 ") == 42
    assert parse_text(by_name["ratio"], "0.5") == 0.5
    assert parse_text(by_name["ok"], "Yes") is True
    assert parse_text(by_name["ok"], "n") is False
    assert parse_text(by_name["size"], "Medium") == "m"
    assert parse_text(by_name["size"], "1") == "s"
    assert parse_text(by_name["tags"], "x") == ["x"]
    assert parse_text(by_name["name"], "") is None
    with pytest.raises(FormError, match="takes yes or no"):
        parse_text(by_name["ok"], "maybe")
    with pytest.raises(FormError, match="takes a number"):
        parse_text(by_name["age"], "old")
