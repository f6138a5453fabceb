"""The card of an MCP server's request for input: a form built from its fields, or a URL to
open, with buttons to submit (accept), decline or cancel.

Unlike the other cards, its widgets take the keyboard: ``f`` in an empty editor (or a click)
moves into the form, Tab moves between its fields, Enter in a text box submits, Esc goes back
to the editor. What was filled in is checked field by field on submit
(:func:`cli.elicitation.collect`, the pod's own checks) and each error is shown under its
field; only a form that fits is sent. Once the request is over (whichever client answered,
or withdrawn by a pause) the card is one line saying how it ended.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.style import Style
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Button, Checkbox, Input, Select, SelectionList, Static

from cli.elicitation import RawValue, collect, default_text, takes
from cli.tui.cards import CardTitle
from cli.tui.entries import ElicitationEntry
from orchestrator.adapters.mcp.forms import FormField, Value

FORM_HINT = "Tab next field · Enter submits · Esc back to the editor"


class ElicitationCard(Widget):
    """A request for input: its form (or URL) while it waits, then how it ended."""

    DEFAULT_CSS = """
    ElicitationCard {
        height: auto;
    }
    ElicitationCard > .card--title {
        padding: 0 1;
        color: $text-muted;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    ElicitationCard.-waiting > .card--title {
        color: $text-warning;
        background: $warning-muted;
        text-style: bold;
        text-wrap: wrap;
    }
    ElicitationCard > .card--tail {
        color: $text-muted;
        padding: 0 1 0 4;
    }
    ElicitationCard .form {
        height: auto;
        padding: 0 1 0 4;
    }
    ElicitationCard .form SelectionList {
        max-height: 6;
    }
    ElicitationCard .field--error, ElicitationCard .form--refused {
        color: $text-error;
    }
    ElicitationCard .-empty {
        display: none;
    }
    ElicitationCard .buttons {
        height: 1;
        margin: 1 0 0 0;
    }
    ElicitationCard .buttons Button {
        margin: 0 1 0 0;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "leave", show=False)]

    class Answered(Message):
        """A button or Enter answered the request (a form only once it fits)."""

        def __init__(
            self, input_id: str, action: str, content: dict[str, Value] | None = None
        ) -> None:
            super().__init__()
            self.input_id = input_id
            self.action = action
            self.content = content

    class Leave(Message):
        """Esc in the form: back to the editor (what was filled in stays)."""

    def __init__(self, entry: ElicitationEntry) -> None:
        super().__init__()
        self.entry = entry
        self._title = CardTitle(classes="card--title")
        self._title.show("", entry.title_parts)
        self._keys = Static(Text(f"{entry.keys}  (editor empty)"), classes="card--tail")

    def compose(self) -> ComposeResult:
        """The title, and while the request waits its keys, form and buttons."""
        yield self._title
        if not self.entry.waiting:
            return
        yield self._keys
        request = self.entry.request
        with Vertical(classes="form"):
            if request.mode == "url":
                url = request.url or ""
                # A Style, not a style string: a URL is not parsed as style words.
                yield Static(Text(url, style=Style(link=url, underline=True)), classes="url")
            elif self.entry.form is None:
                yield Static(Text(f"This form cannot be shown here: {self.entry.problem}"))
            else:
                for index, f in enumerate(self.entry.form.fields):
                    if f.kind != "boolean":
                        yield Static(Text(_label(f)), classes="field--label")
                    yield _widget(index, f)
                    yield Static(id=f"error-{index}", classes="field--error -empty")
            yield Static(classes="form--refused -empty")
            with Horizontal(classes="buttons"):
                if request.mode == "url":
                    yield Button("Opened it", id="accept", compact=True)
                elif self.entry.form is not None:
                    yield Button("Submit", id="accept", variant="primary", compact=True)
                yield Button("Decline", id="decline", compact=True)
                yield Button("Cancel", id="cancel", compact=True)

    def on_mount(self) -> None:
        """Drawn as the entry is now."""
        self.set_class(self.entry.waiting, "-waiting")

    def refresh_from(self, entry: ElicitationEntry) -> None:
        """Show the errors of the last submit or answer; once over, only the outcome."""
        self.entry = entry
        self._title.show("", entry.title_parts)
        self.set_class(entry.waiting, "-waiting")
        if not entry.waiting:
            for child in list(self.children):
                if child is not self._title:
                    child.remove()
            return
        if entry.form is not None:
            for index, f in enumerate(entry.form.fields):
                self._say(f"#error-{index}", entry.errors.get(f.name, ""))
        self._say(".form--refused", entry.refused)

    def focus_form(self) -> None:
        """Move the keyboard into the form: its first field (or first button)."""
        for widget in self.query("Input, Checkbox, Select, SelectionList, Button"):
            if widget.focusable:
                widget.focus()
                return

    def raw(self) -> dict[str, RawValue]:
        """What each field's widget holds, by field name."""
        held: dict[str, RawValue] = {}
        if self.entry.form is None:
            return held
        for index, f in enumerate(self.entry.form.fields):
            widget = self.query_one(f"#field-{index}")
            if isinstance(widget, Input | Checkbox):  # typed text, or ticked
                held[f.name] = widget.value
            elif isinstance(widget, Select):
                held[f.name] = None if widget.is_blank() else str(widget.value)
            elif isinstance(widget, SelectionList):
                held[f.name] = [str(v) for v in widget.selected]
        return held

    def submit(self) -> None:
        """Check the form; answer with it when it fits, else show why beside each field."""
        if self.entry.form is None:
            self.post_message(self.Answered(self.entry.id, "accept"))
            return
        filled = collect(self.entry.form, self.raw())
        self.entry.errors = filled.errors
        self.entry.refused = ""
        self.refresh_from(self.entry)
        if filled.errors:
            first = next(i for i, f in enumerate(self.entry.form.fields) if f.name in filled.errors)
            self.query_one(f"#field-{first}").focus()
            return
        self.post_message(self.Answered(self.entry.id, "accept", filled.content))

    @on(Input.Submitted)
    def _entered(self, event: Input.Submitted) -> None:
        event.stop()
        self.submit()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "accept":
            self.submit()
        elif event.button.id in ("decline", "cancel"):
            self.post_message(self.Answered(self.entry.id, event.button.id))

    def action_leave(self) -> None:
        """Esc: back to the editor."""
        self.post_message(self.Leave())

    def _say(self, selector: str, text: str) -> None:
        for widget in self.query(selector).results(Static):
            widget.update(Text(text))
            widget.set_class(not text, "-empty")


def _label(f: FormField) -> str:
    """``Token * — A secret only a person knows (text)``: * marks a required field."""
    about = f" — {f.description}" if f.description else ""
    return f"{f.title}{' *' if f.required else ''}{about} ({takes(f)})"


def _widget(index: int, f: FormField) -> Widget:
    """The widget a field is filled in with, its default in it."""
    name = f"field-{index}"
    if f.kind == "boolean":
        about = f" — {f.description}" if f.description else ""
        # Text, not str: a server's words are never read as markup (a stray "[/b]" would
        # stop the UI; a "[link=…]" would dress up a link).
        return Checkbox(Text(f"{f.title}{about}"), value=f.default is True, id=name, compact=True)
    if f.kind == "choice":
        values = [value for value, _ in f.options]
        initial: Any = f.default if f.default in values else Select.NULL
        options = [(Text(label), value) for value, label in f.options]
        return Select(options, value=initial, prompt="choose…", id=name, compact=True)
    if f.kind == "choices":
        chosen = f.default if isinstance(f.default, list) else []
        return SelectionList[str](
            *[(Text(label), value, value in chosen) for value, label in f.options],
            id=name,
            compact=True,
        )
    return Input(value=default_text(f), placeholder=takes(f), id=name, compact=True)
