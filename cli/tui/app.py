"""The chat UI: one Textual app attached to one pod over the JSON-lines protocol.

A background worker connects, replays the pod's history and status, then turns every typed
event into a message for the app; the app applies it to the pure
:class:`~cli.tui.model.ChatModel` and draws what changed. The app is the session with the pod
and the host (:class:`~cli.tui.host.AppHost`) of the parts that do the rest: drawing the
entries (:mod:`~cli.tui.drawing`), what keys do (:mod:`~cli.tui.key_actions`, after
:func:`~cli.tui.keys.decide`), slash commands (:mod:`~cli.tui.slash_commands`), answers to
waiting cards (:mod:`~cli.tui.answers`) and choosing a tool card
(:mod:`~cli.tui.card_selection`). :mod:`~cli.tui.launch` runs it on the terminal. The
double-press windows and notice lifetimes read an injectable clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.events import DescendantFocus

from cli.tui.answers import Answers
from cli.tui.card_selection import CardSelection
from cli.tui.conversation import Conversation
from cli.tui.drawing import Drawing
from cli.tui.editor import ChipEditor, CompletionList, PromptInput
from cli.tui.entries import Change
from cli.tui.entry_views import EntryView
from cli.tui.form_card import ElicitationCard
from cli.tui.input import InputChips, PromptHistory, parse_slash, slash_candidates
from cli.tui.key_actions import KeyActions
from cli.tui.keys import Key
from cli.tui.link import Attached, Connector, PodEventReceived, PodGone, PodLink
from cli.tui.mode_cycle import cycle_mode
from cli.tui.model import ChatModel
from cli.tui.notices import Notice, NoticeBoard
from cli.tui.slash_commands import SlashCommands
from cli.tui.status_bar import NoticeLine, StatusBar
from cli.tui.todo_panel import TodoPanel
from orchestrator.protocol import (
    ElicitationResolvedData,
    ErrorData,
    HistoryData,
    RewindData,
    ShutdownData,
    StatusData,
    UserMessageData,
)
from orchestrator.serving.client import ClientError

TICK_S = 0.25
"""How often notices and the status line's alert are checked for expiry."""


class PodApp(App[str]):
    """The interactive UI of one pod; the result says how it ended (``detached``, ``shutdown``)."""

    CSS = "Screen { layout: vertical; }"
    ENABLE_COMMAND_PALETTE = False
    TITLE = "pod"

    BINDINGS: ClassVar[list[BindingType]] = [
        # Priority so the editor's own ctrl+c (copy), ctrl+x (cut) and ctrl+d (delete) never
        # see these keys, and Textual's ctrl+c/ctrl+q defaults do not act.
        Binding("ctrl+c", "press('ctrl+c')", "Pause / quit", priority=True),
        Binding("ctrl+x", "press('ctrl+x')", "Cancel turn", priority=True),
        Binding("ctrl+d", "press('ctrl+d')", "Shut down", priority=True),
        # The spec retires Ctrl-R (resume is Enter); Ctrl-Q would quit on one press.
        Binding("ctrl+r,ctrl+q", "nothing", show=False, priority=True),
        Binding("pageup", "scroll_conversation(-1)", show=False, priority=True),
        Binding("pagedown", "scroll_conversation(1)", show=False, priority=True),
    ]

    def __init__(
        self,
        connect: Connector,
        *,
        clock: Callable[[], float] = time.monotonic,
        notices: Sequence[str] = (),
    ) -> None:
        super().__init__()
        self._connect = connect
        self.clock = clock
        self._startup_notices = list(notices)
        """Warnings from the command line, drawn once the conversation is."""
        self.model = ChatModel()
        self.chips = InputChips()
        self.prompts = PromptHistory()
        self.link: PodLink | None = None
        self.error_message = ""
        self._board = NoticeBoard()
        # The parts; each reaches the app only through AppHost.
        self.drawing = Drawing(self)
        self.key_actions = KeyActions(self)
        self.slash = SlashCommands(self)
        self.answers = Answers(self)
        self.cards = CardSelection(self)
        self.attached = False
        """True once history and status were drawn (tests wait for it)."""

    # -- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        """Conversation, todo panel, notice, completions and editor, and the status line, top
        to bottom."""
        yield Conversation(id="conversation")
        yield TodoPanel(id="todos", classes="-empty")
        yield NoticeLine(id="notice", classes="-empty")
        yield PromptInput(self.chips, self.prompts, submit=self._submit, complete=self._complete)
        yield StatusBar(id="status")

    def on_mount(self) -> None:
        """Editor focused, status drawn, then connect."""
        self.status_bar.show(self.model.pod)
        self.editor.approval_waiting = self.answers.approval_waiting
        self.editor.input_waiting = self.answers.input_waiting
        self.editor.focus()
        self.set_interval(TICK_S, self._tick)
        self._session()

    @property
    def conversation(self) -> Conversation:
        """The scrolling conversation."""
        return self.query_one(Conversation)

    @property
    def editor(self) -> ChipEditor:
        """The input editor."""
        return self.query_one(ChipEditor)

    @property
    def status_bar(self) -> StatusBar:
        """The status line."""
        return self.query_one(StatusBar)

    @property
    def todo_panel(self) -> TodoPanel:
        """The todo list above the notice line."""
        return self.query_one(TodoPanel)

    @property
    def notice(self) -> NoticeLine:
        """The notice line above the editor."""
        return self.query_one(NoticeLine)

    @property
    def completions(self) -> CompletionList:
        """The ``@`` completion list."""
        return self.query_one(CompletionList)

    def on_descendant_focus(self, event: DescendantFocus) -> None:
        """Only the editor takes keys, and the form of a request for input that waits;
        anything else that grabs focus hands it back."""
        if event.widget is self.editor:
            return
        for ancestor in event.widget.ancestors:
            if isinstance(ancestor, ElicitationCard) and ancestor.entry.waiting:
                return
        self.editor.focus(scroll_visible=False)

    # -- the connection ------------------------------------------------------------------------

    @work(exclusive=True, group="pod")
    async def _session(self) -> None:
        # Everything the pod says becomes a message, so it is drawn in the app's own queue,
        # in order with the keys.
        try:
            link = await self._connect()
        except ClientError as exc:
            self.post_message(PodGone(str(exc)))
            return
        self.link = link
        try:
            status = await link.status()
            history = await link.history()
        except (ClientError, TimeoutError) as exc:
            self.post_message(PodGone(f"the pod did not answer: {exc}"))
            return
        self.post_message(Attached(status, history))
        async for event in link.events():
            self.post_message(PodEventReceived(event))
        self.post_message(PodGone())

    @property
    def closing_down(self) -> bool:
        """True once the UI exits: events still queued must not touch widgets that are gone."""
        return self.return_value is not None or not self.is_running or not self.screen_stack

    async def on_attached(self, message: Attached) -> None:
        """Draw the replayed history and the status."""
        if self.closing_down:
            return
        await self._draw_history(message.status, message.history)
        if self.closing_down:
            return
        self.show_status()
        if self._startup_notices:
            self.say(Notice(self._startup_notices[-1], "warn", ttl=None, while_status=False))
        self.attached = True

    async def _draw_history(self, status: StatusData, history: HistoryData) -> None:
        """Replace the conversation on screen with the pod's history."""
        self.model.pod.update(status)
        self.model.load_history(history)
        self.model.adopt_approvals(list(status.approvals))  # waiting as we attach
        self.model.adopt_elicitations(list(status.elicitations))
        for segments in self.model.user_prompts():
            self.chips.saw(segments)
            self.prompts.add(segments)
        for text in self._startup_notices:  # below the replayed conversation, where eyes land
            self.model.info(text)
        await self.drawing.redraw()

    async def redraw(self, status: StatusData, history: HistoryData) -> None:
        """Draw the pod's history anew (after a rewind): the command line's notices are old."""
        self._startup_notices = []
        await self._draw_history(status, history)

    async def on_pod_event_received(self, message: PodEventReceived) -> None:
        """Apply one event to the model and draw the change."""
        if self.closing_down:
            return
        event = message.event
        payload = event.payload
        if isinstance(payload, ErrorData):
            self._on_error(payload)
            return
        if isinstance(payload, ElicitationResolvedData):
            self.answers.resolved(payload.id)
        if event.event == "rewound" and isinstance(payload, RewindData):
            await self.slash.after_rewind(payload)
            return
        if isinstance(payload, UserMessageData):
            # Up/Down recall what the conversation holds, as committed (a typed @path comes
            # back as a chip), whichever client sent it.
            self.key_actions.prompt_committed()
            self.chips.saw(list(payload.segments))
            if payload.seq is None or payload.seq > self.model.replayed_seq:
                self.prompts.add(list(payload.segments))
        self.model.now = self.clock()
        await self.draw(self.model.apply(event))
        if self.closing_down:
            return
        self.show_status()
        if isinstance(payload, ShutdownData) and self.key_actions.shutdown_requested:
            self.exit("shutdown")

    async def on_pod_gone(self, message: PodGone) -> None:
        """Show that the pod went away; after our own shutdown, leave."""
        if self.closing_down:
            return
        if message.error and not self.attached:
            self.error_message = message.error
            self.exit("unreachable", return_code=1)
            return
        await self.draw(self.model.disconnected())
        if self.closing_down:
            return
        self.show_status()
        if self.key_actions.shutdown_requested:
            self.exit("shutdown")
            return
        await self.draw([self.model.info("The connection to the pod closed.")])
        self.say(Notice("The pod is gone: press Ctrl-C to quit", "warn", ttl=None))

    async def draw(self, changes: list[Change]) -> None:
        """Draw what the model changed."""
        await self.drawing.draw(changes)

    def view(self, index: int) -> EntryView | None:
        """The view drawn for the model's entry ``index``."""
        return self.drawing.view(index)

    def _on_error(self, error: ErrorData) -> None:
        if self.answers.refused(str(error.id), error.message):
            return
        self.model.pod.run_sent = False  # a refused run or resume left the pod as it was
        self.key_actions.refused(str(error.id))
        self.say(Notice(f"pod: {error.message}", "error"))

    async def send(
        self, method: str, params: dict[str, Any] | None = None, *, id: str | None = None
    ) -> bool:
        """Send a method to the pod; False (and a notice) when it could not be sent."""
        if self.link is None or not self.model.pod.connected:
            self.say(Notice("Not connected to a pod", "error"))
            return False
        try:
            await self.link.send(method, params, id=id)
        except ClientError as exc:
            self.say(Notice(str(exc), "error"))
            return False
        if method in ("run", "resume"):
            self.model.pod.run_sent = True
        return True

    async def _pod_commands(self) -> list[str]:
        """The names of the pod's custom commands that run (none when it cannot say)."""
        commands = await self.slash.custom_commands()
        return [c.name for c in commands if c.shadowed_by is None]

    async def _complete(self, prefix: str) -> list[str]:
        if prefix.startswith("/"):
            return slash_candidates(prefix[1:], await self._pod_commands())
        if self.link is None:
            return []
        try:
            return await self.link.complete_files(prefix, limit=20)
        except (ClientError, TimeoutError):
            return []

    async def on_unmount(self) -> None:
        """Close the connection; the pod itself keeps running."""
        if self.link is not None:
            await self.link.close()

    # -- notices and the status line ------------------------------------------------------------

    def say(self, notice: Notice | None) -> None:
        """Show a notice (None clears the line) until it expires or the state moves on."""
        self._board.show(notice, status=self.model.pod.key_status, now=self.clock())
        self._show_notice()

    def _show_notice(self) -> None:
        notice = self._board.current(status=self.model.pod.key_status, now=self.clock())
        if notice is None:
            self.notice.say("")
        else:
            self.notice.say(notice.text, level=notice.level)

    def show_status(self) -> None:
        """Draw the status line and the todo panel (and drop a notice they made stale)."""
        self.status_bar.show(self.model.pod, self.clock())
        self.todo_panel.show(self.model.pod.todos)
        self._show_notice()

    def toggle_todos(self) -> bool:
        """``/todos``: open or close the todo panel; True when it is open now."""
        return self.todo_panel.toggle()

    def _tick(self) -> None:
        if not self.closing_down:
            self.show_status()

    # -- keys --------------------------------------------------------------------------------

    async def action_press(self, key: str) -> None:
        """Ctrl-C, Ctrl-X, Ctrl-D: whatever :func:`~cli.tui.keys.decide` says for the status."""
        await self.key_actions.press(Key(key))

    async def _submit(self, text: str) -> bool:
        """Enter in the editor: a slash command, ``run``, or ``resume``; True takes the text.

        A previewed ``/rewind`` waits for it first, and after ``n`` on a waiting tool call the
        text is the reason it is denied.
        """
        if await self.slash.confirm_rewind(text) or await self.answers.deny(text):
            return True
        slash = parse_slash(text)
        if slash is not None:
            if slash.command is None and slash.name in await self._pod_commands():
                return await self.key_actions.submit(text)  # the pod expands it
            return await self.slash.run(slash)
        return await self.key_actions.submit(text)

    @on(ChipEditor.RewindKey)
    async def _rewind_key(self, message: ChipEditor.RewindKey) -> None:
        """Esc Esc on an empty line: as ``/rewind``."""
        await self.slash.rewind("")

    @on(ChipEditor.ModeKey)
    async def _mode_key(self, message: ChipEditor.ModeKey) -> None:
        await cycle_mode(self)

    @on(ChipEditor.ApprovalKey)
    async def _approval_key(self, message: ChipEditor.ApprovalKey) -> None:
        await self.answers.approval_key(message.answer)

    @on(ChipEditor.ElicitationKey)
    async def _elicitation_key(self, message: ChipEditor.ElicitationKey) -> None:
        await self.answers.elicitation_key(message.answer)

    @on(ElicitationCard.Answered)
    async def _card_answered(self, message: ElicitationCard.Answered) -> None:
        await self.answers.answer_input(message.input_id, message.action, message.content)

    @on(ElicitationCard.Leave)
    def _leave_form(self, message: ElicitationCard.Leave) -> None:
        self.editor.focus(scroll_visible=False)
        self.say(None)

    @on(ChipEditor.CardKey)
    def _card_key(self, message: ChipEditor.CardKey) -> None:
        self.cards.key(message.action)

    def action_nothing(self) -> None:
        """Keys the spec retires (Ctrl-R, and Ctrl-Q so one press never quits)."""

    def action_scroll_conversation(self, pages: int) -> None:
        """PageUp/PageDown scroll the conversation, since the editor is short."""
        if pages < 0:
            self.conversation.scroll_page_up(animate=False)
        else:
            self.conversation.scroll_page_down(animate=False)
