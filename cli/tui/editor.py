"""The input widget: a chip-aware editor with ``@`` completion, prompt recall and card keys.

:class:`PromptInput` stacks the completion list over :class:`ChipEditor`. The editor keeps the
focus for the whole session and handles its keys in its own ``_on_key``: a key is handled in
the editor's queue after every key typed before it, so Enter right after a burst of typing
sends all of it and Tab right after ``@src/a`` completes ``src/a``. Tool cards are chosen
from here too (Tab with no ``@`` at the cursor), so no keystroke is ever delivered elsewhere.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Literal

from textual import events, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import OptionList, TextArea

from cli.tui.input import (
    InputChips,
    PromptHistory,
    completion_query,
    should_chip_paste,
    slash_query,
)
from cli.tui.keys import ApprovalAnswer, InputAnswer, approval_key, elicitation_key
from orchestrator.core.segments import Segment

Submit = Callable[[str], Awaitable[bool]]
"""Called with the editor's text on Enter; True when the text was taken (the editor clears)."""

Completer = Callable[[str], Awaitable[list[str]]]
"""The pod's ``complete_files`` for a prefix (no candidates when the pod cannot answer)."""

CardAction = Literal["start", "up", "down", "toggle", "leave"]

NEWLINE_KEYS = frozenset({"shift+enter", "ctrl+j", "alt+enter"})
DOUBLE_ESCAPE_S = 0.8
"""The most time between the two presses of Esc Esc (rewind)."""
"""Ctrl-J works in every terminal (it sends a line feed); the others where they are distinct."""


class CompletionList(OptionList, can_focus=False):
    """``@`` file candidates; never focused, so typing continues in the editor."""

    DEFAULT_CSS = """
    CompletionList {
        height: auto;
        max-height: 8;
        display: none;
        border: none;
        padding: 0;
    }
    CompletionList.-open {
        display: block;
    }
    """

    @property
    def is_open(self) -> bool:
        """True while candidates are shown."""
        return self.has_class("-open")

    def show(self, candidates: list[str]) -> None:
        """Show candidates with the first highlighted (none closes the list)."""
        self.clear_options()
        if not candidates:
            self.remove_class("-open")
            return
        self.add_options(candidates)
        self.highlighted = 0
        self.add_class("-open")

    def close(self) -> None:
        """Hide the list."""
        self.remove_class("-open")
        self.clear_options()

    def move(self, step: int) -> None:
        """Move the highlight, wrapping around."""
        count = self.option_count
        current = self.highlighted or 0
        self.highlighted = (current + step) % count if count else None

    def chosen(self) -> str | None:
        """The highlighted candidate."""
        index = self.highlighted
        return None if index is None else str(self.get_option_at_index(index).prompt)


class ChipEditor(TextArea):
    """A multi-line editor whose chip tokens behave as single characters.

    Backspace or Delete next to a chip removes it whole and the cursor steps over it; a long
    or multi-line paste is inserted as a paste chip instead of its text.
    """

    DEFAULT_CSS = """
    ChipEditor {
        height: auto;
        min-height: 3;
        max-height: 10;
    }
    ChipEditor.-cards {
        border: tall $accent 50%;
    }
    """

    class CardKey(Message):
        """A key for the tool cards while they are being chosen."""

        def __init__(self, action: CardAction) -> None:
            super().__init__()
            self.action: CardAction = action

    class RewindKey(Message):
        """Esc twice in a row in an empty editor: open the list of prompts to rewind to."""

    class ModeKey(Message):
        """Shift-Tab in the editor (not choosing cards): the next permission mode."""

    class ApprovalKey(Message):
        """``y``, ``a`` or ``n`` pressed in an empty editor while a tool call waits."""

        def __init__(self, answer: ApprovalAnswer) -> None:
            super().__init__()
            self.answer: ApprovalAnswer = answer

    class ElicitationKey(Message):
        """``f``, ``o``, ``d`` or ``c`` pressed in an empty editor while a request for input
        waits."""

        def __init__(self, answer: InputAnswer) -> None:
            super().__init__()
            self.answer: InputAnswer = answer

    def __init__(
        self,
        chips: InputChips,
        prompts: PromptHistory,
        completions: CompletionList,
        *,
        submit: Submit,
        complete: Completer,
        id: str | None = None,
    ) -> None:
        super().__init__(
            id=id,
            soft_wrap=True,
            show_line_numbers=False,
            tab_behavior="focus",
            placeholder="Message · Enter sends · Ctrl+J newline · @ attaches a file · /help",
        )
        self.chips = chips
        self.prompts = prompts
        self.completions = completions
        self._submit = submit
        self._complete = complete
        self._prefix: str | None = None
        self._recalled: str | None = None
        self.cards_active = False
        """True while Tab's card selection has the arrow keys and Enter."""
        self._last_escape = 0.0
        self.approval_waiting: Callable[[], bool] = lambda: False
        """Whether a tool call waits for the user (the app sets it)."""
        self.input_waiting: Callable[[], str | None] = lambda: None
        """The mode (``form``, ``url``) of the oldest request for input that waits for the
        user, or None (the app sets it)."""

    # -- keys --------------------------------------------------------------------------------

    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        answer = approval_key(key, waiting=self.approval_waiting(), blank=not self.text)
        if answer is not None:
            self._consume(event)
            self.post_message(self.ApprovalKey(answer))
            return
        answered = elicitation_key(key, mode=self.input_waiting(), blank=not self.text)
        if answered is not None:
            self._consume(event)
            self.post_message(self.ElicitationKey(answered))
            return
        if self.cards_active and self._card_key(key):
            self._consume(event)
            return
        if key == "enter":
            self._consume(event)
            await self._enter()
        elif key in NEWLINE_KEYS:
            self._consume(event)
            self.insert_text("\n")
        elif key == "tab":
            self._consume(event)
            await self._tab()
        elif key == "shift+tab":
            # In the editor Shift-Tab cycles the permission mode, as in Claude Code; among
            # the cards (above) it moves up, and in a form it moves between fields.
            self._consume(event)
            self.post_message(self.ModeKey())
        elif key == "escape":
            self._consume(event)  # it never quits or resumes; it only closes the list
            if self.completions.is_open:
                self._close_completions()
                return
            # Esc Esc on an empty line: rewind, as Claude Code users expect.
            now = time.monotonic()
            if not self.text and now - self._last_escape <= DOUBLE_ESCAPE_S:
                self._last_escape = 0.0
                self.post_message(self.RewindKey())
            else:
                self._last_escape = now if not self.text else 0.0
        elif key in ("up", "down") and self._arrow(-1 if key == "up" else 1):
            self._consume(event)

    @staticmethod
    def _consume(event: events.Key) -> None:
        event.stop()
        event.prevent_default()

    def _card_key(self, key: str) -> bool:
        """Keys while a card is selected; False lets the key act in the editor as usual.

        Space expands a card, not Enter: Enter keeps its meaning wherever the choice is (on
        an empty line of a paused pod it resumes, as the status line says), so it leaves the
        cards and acts in the editor like any other key typed.
        """
        actions: dict[str, CardAction] = {
            "up": "up",
            "shift+tab": "up",
            "down": "down",
            "space": "toggle",
            "tab": "leave",
            "escape": "leave",
        }
        action = actions.get(key)
        if action is None:
            self.leave_cards()  # typing returns to the editor, with the key typed
            return False
        if action == "leave":
            self.leave_cards()
        else:
            self.post_message(self.CardKey(action))
        return True

    def leave_cards(self) -> None:
        """Stop choosing cards."""
        if self.cards_active:
            self.cards_active = False
            self.remove_class("-cards")
            self.post_message(self.CardKey("leave"))

    async def _enter(self) -> None:
        if self.completions.is_open and (self._prefix or "").startswith("/"):
            self._close_completions()  # a command's name: Tab completes it, Enter sends the line
        elif self.completions.is_open:
            self._accept_completion(descend=False)
            return
        if await self._submit(self.text):
            self._recalled = None
            self.load_text("")
            self.chips.clear()

    async def _tab(self) -> None:
        if not self.completions.is_open:
            query = self._query()
            if query is None:
                self.cards_active = True
                self.add_class("-cards")
                self.post_message(self.CardKey("start"))
                return
            # Typed faster than the candidates arrived: fetch them now, in the key's turn.
            self._prefix = query
            self.completions.show(await self._complete(query))
            if not self.completions.is_open:
                return
        self._accept_completion(descend=True)

    def _arrow(self, step: int) -> bool:
        """Up/Down: move in the completion list, or recall a prompt from the first/last row."""
        if self.completions.is_open:
            self.completions.move(step)
            return True
        row = self.cursor_location[0]
        if step < 0 and row == 0:
            recalled = self.prompts.older(self.chips.segments(self.text))
        elif step > 0 and row == self.document.line_count - 1:
            recalled = self.prompts.newer()
        else:
            return False
        if recalled is None:
            return False
        self._show_recalled(recalled)
        return True

    def _show_recalled(self, segments: list[Segment]) -> None:
        text = self.chips.editor_text(segments)
        self._recalled = text
        self.load_text(text)
        self.move_cursor(self.document.end)

    # -- chips -------------------------------------------------------------------------------

    def _around_cursor(self) -> tuple[int, int, str]:
        row, column = self.cursor_location
        return row, column, self.document[row]

    def insert_text(self, token: str) -> None:
        """Insert text or a chip token at the cursor (replacing any selection)."""
        result = self.replace(token, *self.selection, maintain_selection_offset=False)
        self.move_cursor(result.end_location)

    def action_delete_left(self) -> None:
        """Delete one character, or the whole chip that ends at the cursor."""
        if self.selection.is_empty:
            row, column, line = self._around_cursor()
            token = self.chips.token_before(line[:column])
            if token is not None:
                self.delete((row, column - len(token)), (row, column))
                return
        super().action_delete_left()

    def action_delete_right(self) -> None:
        """Delete one character, or the whole chip that starts at the cursor."""
        if self.selection.is_empty:
            row, column, line = self._around_cursor()
            token = self.chips.token_after(line[column:])
            if token is not None:
                self.delete((row, column), (row, column + len(token)))
                return
        super().action_delete_right()

    def action_cursor_left(self, select: bool = False) -> None:
        """Step over a chip as if it were one character."""
        row, column, line = self._around_cursor()
        token = self.chips.token_before(line[:column])
        if token is not None and not select:
            self.move_cursor((row, column - len(token)))
            return
        super().action_cursor_left(select)

    def action_cursor_right(self, select: bool = False) -> None:
        """Step over a chip as if it were one character."""
        row, column, line = self._around_cursor()
        token = self.chips.token_after(line[column:])
        if token is not None and not select:
            self.move_cursor((row, column + len(token)))
            return
        super().action_cursor_right(select)

    async def _on_paste(self, event: events.Paste) -> None:
        if self.read_only or not should_chip_paste(event.text):
            return  # TextArea's own handler inserts short pastes as text
        event.prevent_default()
        event.stop()
        self.insert_text(self.chips.paste(event.text))

    # -- @ completion --------------------------------------------------------------------------

    def _query(self) -> str | None:
        row, column = self.cursor_location
        line = self.document[row][:column]
        # A command's name after "/" on the first line completes too (its query keeps the
        # slash, the completer tells the two apart by it).
        slash = slash_query(line) if row == 0 else None
        return slash if slash is not None else completion_query(line)

    def _close_completions(self) -> None:
        self._prefix = None
        self.completions.close()

    def on_text_area_changed(self) -> None:
        """Editing a recalled prompt makes it the draft; the ``@`` query may have changed."""
        if self._recalled is not None and self.text != self._recalled:
            self._recalled = None
            self.prompts.stop()
        self._follow_query()

    def on_text_area_selection_changed(self) -> None:
        """The cursor moved: the ``@`` query may have changed."""
        self._follow_query()

    def _follow_query(self) -> None:
        query = self._query()
        if query is None:
            if self._prefix is not None:
                self._close_completions()
            return
        if query != self._prefix:
            self._prefix = query
            self._fetch_completions(query)

    @work(exclusive=True, group="complete")
    async def _fetch_completions(self, prefix: str) -> None:
        candidates = await self._complete(prefix)
        if prefix == self._prefix:
            self.completions.show(candidates)

    def _accept_completion(self, *, descend: bool) -> None:
        candidate = self.completions.chosen()
        prefix = self._prefix
        if candidate is None or prefix is None:
            self._close_completions()
            return
        row, column = self.cursor_location
        if prefix.startswith("/"):
            start = (row, column - len(prefix))
            self._close_completions()
            self.replace(f"/{candidate} ", start, (row, column))
            self.move_cursor((row, start[1] + len(candidate) + 2))
            return
        start = (row, column - len(prefix) - 1)  # the '@' itself goes too
        self._close_completions()
        if descend and candidate.endswith("/"):
            self.replace(f"@{candidate}", start, (row, column))
            self.move_cursor((row, start[1] + len(candidate) + 1))
            return
        token = self.chips.file_ref(candidate.rstrip("/") or candidate)
        self.replace(f"{token} ", start, (row, column))
        self.move_cursor((row, start[1] + len(token) + 1))


class PromptInput(Vertical):
    """The input area: ``@`` candidates above the editor."""

    DEFAULT_CSS = """
    PromptInput {
        height: auto;
    }
    """

    def __init__(
        self,
        chips: InputChips,
        prompts: PromptHistory,
        *,
        submit: Submit,
        complete: Completer,
    ) -> None:
        super().__init__()
        self.completions = CompletionList(id="completions")
        self.editor = ChipEditor(
            chips, prompts, self.completions, submit=submit, complete=complete, id="editor"
        )

    def compose(self) -> ComposeResult:
        """Candidates, then the editor."""
        yield self.completions
        yield self.editor
