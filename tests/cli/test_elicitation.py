"""A request for input as both clients show it and read it back (cli/elicitation.py)."""

from __future__ import annotations

import pytest

from cli.elicitation import Filled, collect, default_text, headline, takes, typed
from orchestrator.adapters.mcp.forms import FormError, form_fields

FORM = form_fields(
    {
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name", "minLength": 2, "default": "Ann"},
            "email": {"type": "string", "format": "email"},
            "age": {"type": "integer", "minimum": 1, "maximum": 120},
            "ok": {"type": "boolean", "default": True},
            "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}]},
            "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "default": ["b"]},
        },
        "required": ["age", "size"],
    }
)
NAME, EMAIL, AGE, OK, SIZE, TAGS = FORM.fields


def test_words_for_who_asks_what_a_field_takes_and_its_default() -> None:
    assert headline({"server": "a", "message": "Hi?"}) == "MCP server a asks: Hi?"
    assert [takes(f) for f in FORM.fields] == [
        "text 2– characters",
        "email",
        "integer 1–120",
        "yes/no",
        "one of: Small",
        "any of: a, b",
    ]
    assert [default_text(f) for f in FORM.fields] == ["Ann", "", "", "yes", "", "b"]


def test_a_typed_value_enter_keeps_the_default_and_a_bad_one_says_why() -> None:
    assert typed(NAME, "") == "Ann"
    assert typed(EMAIL, "") is None  # optional, no default: left out
    assert typed(AGE, " 42 ") == 42
    assert typed(OK, "n") is False
    assert typed(SIZE, "1") == "s"
    assert typed(TAGS, "") == ["b"]
    with pytest.raises(FormError, match="field 'age' is required"):
        typed(AGE, "")
    with pytest.raises(FormError, match="field 'age' takes at most 120"):
        typed(AGE, "121")
    with pytest.raises(FormError, match="field 'name' takes at least 2 characters"):
        typed(NAME, "A")


def test_widget_values_are_checked_field_by_field() -> None:
    raw = {"name": "A", "email": "nope", "age": "x", "ok": False, "size": None, "tags": []}
    assert collect(FORM, raw) == Filled(
        content={},
        errors={
            "name": "field 'name' takes at least 2 characters",
            "email": "field 'email' takes an email",
            "age": "field 'age' takes a number",
            "size": "field 'size' is required",
        },
    )
    good = {"name": "", "email": "a@b.co", "age": "7", "ok": False, "size": "s", "tags": []}
    # An emptied box and no tags leave optional fields out: the server uses its defaults.
    assert collect(FORM, good) == Filled(
        content={"email": "a@b.co", "age": 7, "ok": False, "size": "s"}
    )


def test_a_servers_words_reach_a_terminal_as_text_not_as_control_sequences() -> None:
    from cli.elicitation_prompt import describe

    data = {
        "id": "i",
        "server": "a",
        "message": "hi\x1b[2J\x1b]0;owned\x07\nline 2",
        "mode": "form",
    }
    shown = describe(data)
    assert "\x1b" not in shown and "\x07" not in shown
    assert shown == "? MCP server a asks: hi\\x1b[2J\\x1b]0;owned\\x07\nline 2"
