"""Requests for input in the chat model and the keys, without an app."""

from __future__ import annotations

from typing import Any

from cli.tui.entries import Change, ElicitationEntry
from cli.tui.keys import elicitation_key
from cli.tui.model import ChatModel
from orchestrator.protocol import ElicitationRequestData, HistoryData
from orchestrator.serving.client import PodEvent

FORM: dict[str, Any] = {
    "id": "input_1",
    "server": "a",
    "message": "Your token, please",
    "mode": "form",
    "schema": {
        "type": "object",
        "properties": {"token": {"type": "string"}, "remember": {"type": "boolean"}},
        "required": ["token"],
    },
    "tool": "mcp__a__ask_token",
}
URL: dict[str, Any] = {
    "id": "input_2",
    "server": "b",
    "message": "Sign in",
    "mode": "url",
    "url": "https://b.test/login",
    "pod": "kid",
}


def test_a_request_is_a_card_until_it_is_resolved_then_one_line() -> None:
    model = ChatModel()
    assert model.apply(PodEvent("elicitation_request", FORM)) == [Change("added", 0)]
    model.apply(PodEvent("elicitation_request", URL))
    (form, url) = model.waiting_elicitations()
    assert form.form is not None and [f.name for f in form.form.fields] == ["token", "remember"]
    assert (form.keys, url.keys) == (
        "f fill in · d decline · c cancel",
        "o opened · d decline · c cancel",
    )
    assert url.title == "? MCP server b (child kid) asks: Sign in"
    assert model.apply(PodEvent("elicitation_resolved", {"id": "input_1", "action": "accept"})) == [
        Change("updated", 0)
    ]
    model.apply(PodEvent("elicitation_resolved", {"id": "input_2", "action": "withdrawn"}))
    assert model.waiting_elicitations() == []
    assert model.transcript() == [
        "input[accept]: ✓ MCP server a asked: Your token, please — accepted",
        "input[withdrawn]: ⊘ MCP server b (child kid) asked: Sign in — withdrawn",
    ]
    # One this UI never saw (answered before it attached) changes nothing.
    assert model.apply(PodEvent("elicitation_resolved", {"id": "x", "action": "decline"})) == []


def test_an_attaching_ui_adopts_waiting_requests_once() -> None:
    model = ChatModel()
    model.load_history(HistoryData(items=[]))
    waiting = [ElicitationRequestData.model_validate(FORM)]
    assert model.adopt_elicitations(waiting) == [Change("added", 0)]
    assert model.adopt_elicitations(waiting) == []  # the live event after the status
    model.load_history(HistoryData(items=[]))  # a rewind redraws: adopted anew
    assert model.adopt_elicitations(waiting) == [Change("added", 0)]


def test_a_schema_this_ui_cannot_show_is_named_not_drawn() -> None:
    nested = {**FORM, "schema": {"type": "object", "properties": {"x": {"type": "object"}}}}
    entry = ElicitationEntry.of(ElicitationRequestData.model_validate(nested))
    assert entry.form is None and "type 'object' is not one a form can ask for" in entry.problem


def test_input_keys_act_only_on_an_empty_editor_while_a_request_waits() -> None:
    assert elicitation_key("f", mode="form", blank=True) == "fill"
    assert elicitation_key("d", mode="form", blank=True) == "decline"
    assert elicitation_key("c", mode="url", blank=True) == "cancel"
    assert elicitation_key("o", mode="url", blank=True) == "accept"
    assert elicitation_key("o", mode="form", blank=True) is None  # a form is filled in
    assert elicitation_key("f", mode="url", blank=True) is None
    assert elicitation_key("d", mode="form", blank=False) is None  # typing a word
    assert elicitation_key("d", mode=None, blank=True) is None
