"""The card of an MCP server's request for input, against a real pod and the asking server:
a form with its defaults, errors beside their fields, and the answer the server gets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult
from textual.widgets import Checkbox, Input, Select, SelectionList

from cli.tui.entries import ElicitationEntry
from cli.tui.form_card import ElicitationCard
from orchestrator.protocol import ElicitationRequestData
from tests.cli.tui.conftest import Session, attach, screen_text
from tests.e2e.harness import ScriptedReply, ScriptedToolCall, running_pod
from tests.mcp.asking_server import config

SIZE = (80, 40)
MCP: dict[str, Any] = {"servers": {"a": config()}}


def call(tool: str) -> ScriptedReply:
    return ScriptedReply(tool_calls=[ScriptedToolCall(name=f"mcp__a__{tool}", input={})])


async def results(s: Session) -> list[str]:
    return [i["content"] for i in (await s.probe.history()).items if i["kind"] == "tool_result"]


async def test_a_form_with_defaults_refuses_a_bad_value_beside_it_then_sends(
    workspace: Path, short_dir: Path
) -> None:
    replies = [call("ask"), ScriptedReply(text="Hello.")]
    async with (
        running_pod(workspace, short_dir, replies=replies, mcp=MCP) as pod,
        attach(pod, size=SIZE) as s,
    ):
        await s.probe.send("run", {"input": "who am I?"})
        await s.until(lambda: "MCP server a asks: Who are you?" in s.screen, "the card")
        assert "f fill in · d decline · c cancel" in s.screen
        assert "Awaiting input" in s.status_line
        card = s.app.query_one(ElicitationCard)
        name, age = card.query(Input)
        assert (name.value, age.value) == ("John Doe", "30")  # the defaults, prefilled
        await s.pilot.press("f")
        assert s.app.focused is name
        await s.pilot.press("tab")
        assert s.app.focused is age
        await s.pilot.press("end", "backspace", "backspace", *"abc", "enter")
        await s.until(lambda: "field 'age' takes a number" in s.screen, "the error")
        assert s.app.focused is age and card.entry.waiting  # nothing was sent
        await s.pilot.press("backspace", "backspace", "backspace", "4", "1", "enter")
        await s.until(lambda: "asked: Who are you? — accepted" in s.screen, "the outcome")
        await s.ui_status("idle")
        assert await results(s) == ["accept {'name': 'John Doe', 'age': 41}"]
        assert "Submit" not in s.screen  # one line now
        assert s.app.focused is s.app.editor


async def test_a_late_ui_shows_the_waiting_form_and_a_required_field_must_be_filled(
    workspace: Path, short_dir: Path
) -> None:
    replies = [call("ask_token"), ScriptedReply(text="In.")]
    async with running_pod(workspace, short_dir, replies=replies, mcp=MCP) as pod:
        c = await pod.client()
        await c.send("run", {"input": "log in"})
        await c.wait_for("elicitation_request", timeout=60)
        async with attach(pod, size=SIZE) as s:
            assert "MCP server a asks: Your token, please" in s.screen
            assert "Token * — A secret only a person knows (text)" in s.screen
            await s.pilot.press("f", "enter")  # the token is required and has no default
            await s.until(lambda: "field 'token' is required" in s.screen, "the error")
            await s.pilot.press(*"s3cret", "tab")
            assert isinstance(s.app.focused, Checkbox)
            await s.pilot.press("space", "tab", "enter")  # remember; then Submit
            await s.ui_status("idle")
            assert await results(s) == ["accept {'token': 's3cret', 'remember': True}"]
        await c.close()


async def test_a_card_answered_elsewhere_turns_into_its_outcome_and_d_declines(
    workspace: Path, short_dir: Path
) -> None:
    replies = [call("ask_token"), call("ask_token"), ScriptedReply(text="No.")]
    async with (
        running_pod(workspace, short_dir, replies=replies, mcp=MCP) as pod,
        attach(pod, size=SIZE) as s,
    ):
        await s.probe.send("run", {"input": "log in twice"})
        await s.until(lambda: len(s.app.model.waiting_elicitations()) == 1, "the first card")
        first = s.app.model.waiting_elicitations()[0].id
        await s.probe.send("answer_elicitation", {"id": first, "action": "cancel"})
        await s.until(lambda: "Your token, please — cancelled" in s.screen, "the outcome")
        await s.until(
            lambda: [e.id for e in s.app.model.waiting_elicitations()] not in ([], [first]),
            "the second card",
        )
        await s.pilot.press("d")
        await s.ui_status("idle")
        assert "Your token, please — declined" in s.screen
        assert await results(s) == ["cancel", "decline"]


CHOICES = {
    "type": "object",
    "properties": {
        "size": {
            "type": "string",
            "oneOf": [{"const": "s", "title": "Small"}, {"const": "m", "title": "Medium"}],
            "default": "m",
        },
        "colour": {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"]},
        "toppings": {
            "type": "array",
            "items": {"enum": ["ham", "olives", "basil"]},
            "default": ["basil"],
            "maxItems": 2,
        },
    },
    "required": ["colour"],
}


class CardApp(App[None]):
    """One card, as the chat UI mounts it; the answers it posts are kept."""

    def __init__(self, entry: ElicitationEntry) -> None:
        super().__init__()
        self.entry = entry
        self.answers: list[tuple[str, dict[str, Any] | None]] = []

    def compose(self) -> ComposeResult:
        yield ElicitationCard(self.entry)

    def on_elicitation_card_answered(self, message: ElicitationCard.Answered) -> None:
        self.answers.append((message.action, message.content))


async def test_choices_are_a_select_and_a_selection_list_with_their_defaults() -> None:
    request = ElicitationRequestData(id="i", server="a", message="Pizza?", schema=CHOICES)
    app = CardApp(ElicitationEntry.of(request))
    async with app.run_test(size=SIZE) as pilot:
        card = app.query_one(ElicitationCard)
        size, colour = card.query(Select)
        toppings = card.query_one(SelectionList)
        assert (size.value, colour.is_blank(), toppings.selected) == ("m", True, ["basil"])
        card.submit()  # the colour is required
        await pilot.pause()
        assert "field 'colour' is required" in screen_text(app) and not app.answers
        colour.value = "g"
        toppings.select("ham")
        toppings.select("olives")  # three: more than it takes
        card.submit()
        await pilot.pause()
        assert "field 'toppings' takes at most 2 choices" in screen_text(app)
        toppings.deselect("basil")
        card.submit()
        await pilot.pause()
        assert app.answers == [
            ("accept", {"size": "m", "colour": "g", "toppings": ["ham", "olives"]})
        ]
        await pilot.click("#decline")
        assert app.answers[-1] == ("decline", None)


async def test_a_url_request_shows_its_link_and_is_accepted_as_opened() -> None:
    url = "https://a.test/sign in?next=[home]"
    request = ElicitationRequestData(id="u", server="a", message="Sign in", mode="url", url=url)
    app = CardApp(ElicitationEntry.of(request))
    async with app.run_test(size=SIZE) as pilot:
        assert url in screen_text(app) and "Opened it" in screen_text(app)
        await pilot.click("#accept")
        assert app.answers == [("accept", None)]


async def test_a_servers_words_in_a_form_are_shown_as_written_never_as_markup() -> None:
    # A server chooses every title and choice label: "[/b]" used to stop the UI (a markup
    # error), and "[link=…]" would have dressed up a link.
    sneaky = "[/b] hi [link=https://evil.example]x[/link]"
    schema = {
        "type": "object",
        "properties": {
            "ok": {"type": "boolean", "title": sneaky},
            "pick": {"type": "string", "oneOf": [{"const": "a", "title": sneaky}]},
            "many": {"type": "array", "items": {"anyOf": [{"const": "b", "title": sneaky}]}},
        },
    }
    request = ElicitationRequestData(id="i", server="a", message=sneaky, schema=schema)
    app = CardApp(ElicitationEntry.of(request))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        card = app.query_one(ElicitationCard)
        assert str(card.query_one(Checkbox).label) == sneaky
        assert "[/b] hi" in screen_text(app)
        card.submit()
        await pilot.pause()
        assert app.answers == [("accept", {"ok": False})]
