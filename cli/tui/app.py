"""The chat UI: one Textual app attached to one pod over the JSON-lines protocol.

A background worker connects, replays the pod's history and status, then turns every
broadcast event into a message for the app; the app applies it to the pure
:class:`~cli.tui.model.ChatModel` and draws what changed. Keys follow the pause/resume spec
(see ``docs/tui-keybindings.md``); the double-press windows use an injectable clock.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol

from textual import events, on, work
from textual.actions import SkipAction
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.widgets import TextArea
from textual.worker import WorkerCancelled, WorkerFailed

from cli.tui.model import (
    AssistantEntry,
    Change,
    ChatModel,
    InputChips,
    ThinkingEntry,
    ToolEntry,
    UserEntry,
    completion_query,
    is_blank,
)
from cli.tui.widgets import (
    AssistantView,
    ChipEditor,
    CompletionList,
    NoticeLine,
    StatusBar,
    ThinkingView,
    ToolCard,
    view_for,
)
from orchestrator.client import ClientError, PodClient, PodEvent

DOUBLE_PRESS_S = 3.0
"""The second Ctrl-C (quit) or Ctrl-D (shutdown while running) must come within this window."""

QUIT_WARNING = "Press Ctrl-C again to quit; the pod keeps running"
SHUTDOWN_WARNING = "A turn is running: press Ctrl-D again to shut the pod down"
KEPT_INPUT = "A turn is running: your input is kept. Ctrl-C pauses, then Enter sends it."


APP_CSS = """
/* Narrow-terminal friendly: one column, nothing fixed-width, works in 80x24. */

Screen {
    layout: vertical;
}

#conversation {
    height: 1fr;
    padding: 0 0;
}

.user {
    background: $boost;
    padding: 0 1;
    margin: 1 0 0 0;
}

AssistantView {
    padding: 0 1;
    margin: 1 0 0 0;
}

AssistantView MarkdownBlock:last-child {
    margin-bottom: 0;
}

/* Textual's headers take three blank rows; a 24-row terminal cannot spare them. */
AssistantView MarkdownHeader {
    margin: 1 0 0 0;
}

AssistantView MarkdownHeader:first-child {
    margin-top: 0;
}

AssistantView.-interrupted {
    border-bottom: dashed $warning;
    border-subtitle-color: $warning;
}

.thinking {
    color: $text-muted;
    text-style: italic;
    padding: 0 1;
}

Collapsible.tool, Collapsible.note {
    border-top: none;
    padding: 0;
    margin: 0;
    background: transparent;
}

Collapsible.tool CollapsibleTitle, Collapsible.note CollapsibleTitle {
    padding: 0 1;
}

Collapsible.tool Contents, Collapsible.note Contents {
    padding: 0 1 0 3;
}

Collapsible.tool.-synthetic CollapsibleTitle {
    color: $accent;
    text-style: italic;
}

Collapsible.tool.-error CollapsibleTitle {
    color: $error;
}

Collapsible.note CollapsibleTitle {
    color: $text-muted;
    text-style: italic;
}

.alert {
    padding: 0 1;
}

.alert.-warn {
    color: $text-warning;
    background: $warning-muted;
}

.alert.-error {
    color: $text-error;
    background: $error-muted;
}

.info {
    color: $text-muted;
    padding: 0 1;
}

#completions {
    height: auto;
    max-height: 8;
    display: none;
    border: none;
    padding: 0;
}

#completions.-open {
    display: block;
}

#notice {
    height: auto;
    padding: 0 1;
}

#notice.-empty {
    display: none;
}

#notice.-warn {
    color: $text-warning;
}

#notice.-error {
    color: $text-error;
}

#editor {
    height: auto;
    min-height: 3;
    max-height: 10;
}

#status {
    height: auto;
    padding: 0 1;
    background: $panel;
}

#status.-running {
    background: $primary-muted;
}

#status.-paused {
    background: $warning-muted;
}
"""


class PodLink(Protocol):
    """What the UI needs of a connection; :class:`PodClient` is the real one."""

    async def send(
        self, method: str, params: dict[str, Any] | None = None, *, id: Any = None
    ) -> None:
        """Send a method without waiting."""

    async def request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float = 10.0
    ) -> PodEvent:
        """Send a method and wait for its direct reply."""

    def events(self) -> AsyncIterator[PodEvent]:
        """Broadcast events until the connection closes."""

    async def close(self) -> None:
        """Close the connection."""


Connector = Callable[[], Awaitable[PodLink]]


class Attached(Message):
    """The connection is up; status and history were fetched."""

    def __init__(self, status: dict[str, Any], history: dict[str, Any]) -> None:
        super().__init__()
        self.status = status
        self.history = history


class PodEventReceived(Message):
    """One broadcast event from the pod."""

    def __init__(self, event: PodEvent) -> None:
        super().__init__()
        self.event = event


class PodGone(Message):
    """The connection closed (shutdown, crash, or the pod could not be reached)."""

    def __init__(self, error: str = "") -> None:
        super().__init__()
        self.error = error


class PodApp(App[str]):
    """The interactive UI of one pod; the result says how it ended (``detached``, ``shutdown``)."""

    # Inline rather than a .tcss file, so an installed wheel cannot lose it.
    CSS = APP_CSS
    ENABLE_COMMAND_PALETTE = False
    TITLE = "pod"

    BINDINGS: ClassVar[list[BindingType]] = [
        # Priority so the editor's own ctrl+c (copy), ctrl+x (cut), ctrl+d (delete) and Enter
        # (newline) never see these keys, and Textual's ctrl+c/ctrl+q defaults do not act.
        Binding("ctrl+c", "interrupt", "Pause / quit", priority=True),
        Binding("ctrl+x", "cancel_turn", "Cancel turn", priority=True),
        Binding("ctrl+d", "shutdown_pod", "Shut down", priority=True),
        Binding("enter", "submit", "Send", priority=True),
        Binding("shift+enter,ctrl+j,alt+enter", "newline", "Newline", priority=True),
        Binding("tab", "complete", show=False, priority=True),
        Binding("up", "completion_move(-1)", show=False, priority=True),
        Binding("down", "completion_move(1)", show=False, priority=True),
        Binding("escape", "escape", show=False, priority=True),
        # The spec retires Ctrl-R (resume is Enter) and Esc; Ctrl-Q would quit on one press.
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
        self._clock = clock
        self._notices = list(notices)
        """Start-up warnings from the command line, drawn once the conversation is."""
        self.model = ChatModel()
        self.chips = InputChips()
        self.link: PodLink | None = None
        self.error_message = ""
        self._views: dict[int, Widget] = {}
        self._armed: dict[str, float] = {}
        self._shutdown_requested = False
        self._runs: dict[str, tuple[str, dict[str, dict[str, Any]]]] = {}
        self._run_seq = 0
        self._completion_prefix: str | None = None
        self._transient_notice = False
        self.attached = False
        """True once history and status were drawn (tests wait for it)."""

    # -- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        """Conversation, completions, notice, editor and the status line, top to bottom."""
        yield VerticalScroll(id="conversation")
        yield CompletionList(id="completions")
        yield NoticeLine(id="notice", classes="-empty")
        yield ChipEditor(self.chips, id="editor")
        yield StatusBar(id="status")

    def on_mount(self) -> None:
        """Start at the bottom of the conversation with the editor focused, then connect."""
        self.query_one("#conversation", VerticalScroll).anchor()
        self.status_bar.show(self.model.pod)
        self.editor.focus()
        self._session()

    @property
    def editor(self) -> ChipEditor:
        """The input editor."""
        return self.query_one(ChipEditor)

    @property
    def status_bar(self) -> StatusBar:
        """The status line."""
        return self.query_one(StatusBar)

    @property
    def notice(self) -> NoticeLine:
        """The notice line above the editor."""
        return self.query_one(NoticeLine)

    @property
    def completions(self) -> CompletionList:
        """The ``@`` completion list."""
        return self.query_one(CompletionList)

    # -- the connection ------------------------------------------------------------------------

    @work(exclusive=True, group="pod")
    async def _session(self) -> None:
        try:
            link = await self._connect()
        except ClientError as exc:
            self.post_message(PodGone(str(exc)))
            return
        self.link = link
        try:
            status = await link.request("get_status")
            history = await link.request("get_history")
        except (ClientError, TimeoutError) as exc:
            self.post_message(PodGone(f"the pod did not answer: {exc}"))
            return
        self.post_message(Attached(status.data, history.data))
        async for event in link.events():
            self.post_message(PodEventReceived(event))
        self.post_message(PodGone())

    @property
    def _closing_down(self) -> bool:
        # Events still queued when the UI exits must not touch widgets that are gone.
        return self.return_value is not None or not self.is_running or not self.screen_stack

    async def on_attached(self, message: Attached) -> None:
        """Draw the replayed history and the status."""
        if self._closing_down:
            return
        self.model.pod.update(message.status)
        self.model.load_history(
            list(message.history.get("items") or []),
            str(message.history.get("greeting", "")),
            list(message.history.get("alerts") or []),
        )
        for entry in self.model.entries:
            if isinstance(entry, UserEntry):
                self.chips.saw(entry.segments)
        for text in self._notices:  # below the replayed conversation, where the eye lands
            self.model.info(text)
        conversation = self.query_one("#conversation", VerticalScroll)
        await conversation.remove_children()
        self._views = {i: view_for(entry) for i, entry in enumerate(self.model.entries)}
        if self._views:
            await conversation.mount_all(self._views.values())
        if self._closing_down:
            return
        self.status_bar.show(self.model.pod)
        if self._notices:
            self._say(self._notices[-1], level="warn")
        self.attached = True

    async def on_pod_event_received(self, message: PodEventReceived) -> None:
        """Apply one event to the model and draw the change."""
        if self._closing_down:
            return
        event = message.event
        if event.event == "error":
            self._on_error(event.data)
            return
        if event.event in ("history", "file_completions"):
            return  # replies to requests that timed out; nothing to draw
        if event.event == "user_message":
            self._runs.clear()
            self.chips.saw(list(event.data.get("segments") or []))
        await self._draw(self.model.apply(event.event, event.data))
        if self._closing_down:
            return
        self.status_bar.show(self.model.pod)
        if event.event == "status" and self._transient_notice:
            # "Pausing…" and the like are answered by the status line itself.
            self._say("")
        if event.event == "shutdown" and self._shutdown_requested:
            self.exit("shutdown")

    async def on_pod_gone(self, message: PodGone) -> None:
        """Show that the pod went away; after our own shutdown, leave."""
        if self._closing_down:
            return
        if message.error and not self.attached:
            self.error_message = message.error
            self.exit("unreachable", return_code=1)
            return
        await self._draw(self.model.disconnected())
        if self._closing_down:
            return
        self.status_bar.show(self.model.pod)
        if self._shutdown_requested:
            self.exit("shutdown")
            return
        await self._draw([self.model.info("The connection to the pod closed.")])
        self._say("The pod is gone: press Ctrl-C to quit", level="warn")

    async def _draw(self, changes: list[Change]) -> None:
        conversation = self.query_one("#conversation", VerticalScroll)
        for change in changes:
            if self._closing_down:
                return
            entry = self.model.entries[change.index]
            if change.kind == "added":
                view: Widget = view_for(entry)
                self._views[change.index] = view
                await conversation.mount(view)
                continue
            view = self._views[change.index]
            if isinstance(entry, AssistantEntry) and isinstance(view, AssistantView):
                if change.kind == "appended":
                    view.stream(change.text)
                    continue
                if not entry.streaming:
                    view.finish(entry.text)
                view.refresh_from(entry)
            elif isinstance(entry, ToolEntry) and isinstance(view, ToolCard):
                # Separate branches keep each refresh_from call type-checked.
                view.refresh_from(entry)
            elif isinstance(entry, ThinkingEntry) and isinstance(view, ThinkingView):
                view.refresh_from(entry)

    def _on_error(self, data: dict[str, Any]) -> None:
        run = self._runs.pop(str(data.get("id")), None)
        if run is not None and not self.editor.text.strip():
            # The pod refused our run (e.g. another client started a turn first): give the
            # input back rather than losing it.
            text, chips = run
            self.chips.chips.update(chips)
            self.editor.load_text(text)
            self.editor.move_cursor(self.editor.document.end)
        self._say(f"pod: {data.get('message', 'error')}", level="error")

    async def _send(self, method: str, params: dict[str, Any] | None = None, **kw: Any) -> bool:
        if self.link is None or not self.model.pod.connected:
            self._say("Not connected to a pod", level="error")
            return False
        try:
            await self.link.send(method, params, **kw)
        except ClientError as exc:
            self._say(str(exc), level="error")
            return False
        return True

    def _say(self, text: str, *, level: str = "info", transient: bool = False) -> None:
        self._transient_notice = transient
        self.notice.say(text, level=level)

    async def on_unmount(self) -> None:
        """Close the connection; the pod itself keeps running."""
        if self.link is not None:
            await self.link.close()

    # -- keys --------------------------------------------------------------------------------

    @property
    def _status(self) -> str:
        pod = self.model.pod
        return pod.status if pod.connected else "disconnected"

    def _second_press(self, key: str) -> bool:
        """True when ``key`` was already pressed within the window; otherwise arm it."""
        now = self._clock()
        last = self._armed.pop(key, None)
        if last is not None and now - last <= DOUBLE_PRESS_S:
            return True
        self._armed[key] = now
        return False

    async def action_interrupt(self) -> None:
        """Ctrl-C: pause a running turn; otherwise warn, and quit the UI on a second press."""
        status = self._status
        if status in ("disconnected", "stopped"):
            self.exit("detached")
            return
        if status == "running":
            self._armed.pop("ctrl+c", None)
            if await self._send("pause"):
                self._say("Pausing…", transient=True)
            return
        if self._second_press("ctrl+c"):
            self.exit("detached")
            return
        self._say(QUIT_WARNING, level="warn")

    async def action_shutdown_pod(self) -> None:
        """Ctrl-D: shut the pod down (a running turn asks for a second press first)."""
        status = self._status
        if status in ("disconnected", "stopped"):
            self.exit("shutdown")
            return
        if status == "running" and not self._second_press("ctrl+d"):
            self._say(SHUTDOWN_WARNING, level="warn")
            return
        self._shutdown_requested = True
        if await self._send("shutdown"):
            self._say("Shutting the pod down…")
        else:
            self._shutdown_requested = False

    async def action_cancel_turn(self) -> None:
        """Ctrl-X: cancel (discard) a running turn."""
        status = self._status
        if status != "running":
            self._say(f"Nothing to cancel: the pod is {status}", level="error")
            return
        if await self._send("cancel"):
            self._say("Cancelling the turn…", transient=True)

    # Keys the app binds with priority are handled at once, while typed characters are
    # still queued for the editor; the actions that read or edit the editor therefore run
    # in the editor's own queue (call_later), after every key typed before them.

    def action_submit(self) -> None:
        """Enter: accept a completion, send ``run``, or ``resume`` a paused turn."""
        if self.focused is not self.editor and not self._completion_open:
            raise SkipAction()  # let a focused tool card toggle
        self.editor.call_later(self._submit)

    async def _submit(self) -> None:
        if self._completion_open:
            self._accept_completion(descend=False)
            return
        text = self.editor.text.strip()
        segments = self.chips.segments(text)
        blank = is_blank(segments)
        status = self._status
        if status == "running":
            if not blank:
                self._say(KEPT_INPUT, level="warn")
            return
        if status != "idle" and status != "paused":
            self._say(f"Cannot send: the pod is {status}", level="error")
            return
        if blank:
            if status == "paused" and await self._send("resume"):
                self._say("")
            return
        self._run_seq += 1
        run_id = f"ui-run-{self._run_seq}"
        self._runs[run_id] = (self.editor.text, dict(self.chips.chips))
        if await self._send("run", {"segments": segments}, id=run_id):
            self.editor.clear()
            self.chips.clear()
            self._say("")

    def action_newline(self) -> None:
        """Shift+Enter / Ctrl+J: a newline in the editor."""
        if self.focused is not self.editor:
            raise SkipAction()
        self.editor.call_later(self.editor.insert_text, "\n")

    def on_key(self, event: events.Key) -> None:
        """Typing while a tool card or the conversation has focus goes to the editor."""
        if event.is_printable and event.character and self.focused is not self.editor:
            self.editor.focus()
            self.editor.insert_text(event.character)
            event.stop()

    def action_nothing(self) -> None:
        """Keys the spec retires (Ctrl-R, and Ctrl-Q so one press never quits)."""

    def action_escape(self) -> None:
        """Esc only closes the completion list; it never quits or resumes."""
        self._close_completions()

    def action_scroll_conversation(self, pages: int) -> None:
        """PageUp/PageDown scroll the conversation, since the editor is short."""
        conversation = self.query_one("#conversation", VerticalScroll)
        if pages < 0:
            conversation.scroll_page_up()
        else:
            conversation.scroll_page_down()

    # -- @ completion ------------------------------------------------------------------------

    @property
    def _completion_open(self) -> bool:
        return self.completions.has_class("-open")

    def _close_completions(self) -> None:
        self._completion_prefix = None
        self.completions.remove_class("-open")
        self.completions.clear_options()

    @on(TextArea.Changed, "#editor")
    @on(TextArea.SelectionChanged, "#editor")
    def _input_moved(self) -> None:
        row, column = self.editor.cursor_location
        query = completion_query(self.editor.document[row][:column])
        if query is None:
            if self._completion_prefix is not None:
                self._close_completions()
            return
        if query != self._completion_prefix:
            self._completion_prefix = query
            self._fetch_completions(query)

    @work(exclusive=True, group="complete")
    async def _fetch_completions(self, prefix: str) -> None:
        if self.link is None:
            return
        try:
            reply = await self.link.request("complete_files", {"prefix": prefix, "limit": 20})
        except (ClientError, TimeoutError):
            return
        if prefix != self._completion_prefix:
            return
        candidates = [str(c) for c in reply.data.get("candidates") or []]
        completions = self.completions
        completions.clear_options()
        if not candidates:
            completions.remove_class("-open")
            return
        completions.add_options(candidates)
        completions.highlighted = 0
        completions.add_class("-open")

    def action_complete(self) -> None:
        """Tab: accept the highlighted candidate (a directory is entered, not chipped)."""
        if self.focused is not self.editor and not self._completion_open:
            raise SkipAction()
        self.editor.call_later(self._complete_now)

    async def _complete_now(self) -> None:
        if not self._completion_open:
            # Typed faster than the candidates arrived: fetch them now.
            row, column = self.editor.cursor_location
            query = completion_query(self.editor.document[row][:column])
            if query is None:
                self.screen.focus_next()  # no @ at the cursor: Tab moves focus as usual
                return
            self._completion_prefix = query
            with contextlib.suppress(WorkerCancelled, WorkerFailed):
                await self._fetch_completions(query).wait()
            if not self._completion_open:
                return
        self._accept_completion(descend=True)

    def action_completion_move(self, step: int) -> None:
        """Up/Down move in the completion list while it is open."""
        if not self._completion_open:
            raise SkipAction()
        completions = self.completions
        count = completions.option_count
        current = completions.highlighted or 0
        completions.highlighted = (current + step) % count if count else None

    def _accept_completion(self, *, descend: bool) -> None:
        completions = self.completions
        index = completions.highlighted
        prefix = self._completion_prefix
        if index is None or prefix is None:
            self._close_completions()
            return
        candidate = str(completions.get_option_at_index(index).prompt)
        row, column = self.editor.cursor_location
        start = (row, column - len(prefix) - 1)  # the '@' itself goes too
        self._close_completions()
        if descend and candidate.endswith("/"):
            self.editor.replace(f"@{candidate}", start, (row, column))
            self.editor.move_cursor((row, start[1] + len(candidate) + 1))
            return
        token = self.chips.file_ref(candidate.rstrip("/") or candidate)
        self.editor.replace(f"{token} ", start, (row, column))
        self.editor.move_cursor((row, start[1] + len(token) + 1))


def run_ui(socket: Path, *, notices: Sequence[str] = ()) -> str:
    """Run the UI attached to the pod on ``socket``; returns how it ended.

    ``notices`` are warnings the command line has for the user (an option a running pod
    cannot apply): printed before the UI takes the screen they would be lost, so the UI
    draws them.
    """
    from cli.errors import CliError
    from orchestrator.server import socket_is_live

    if not socket_is_live(socket):
        # Fail before taking over the terminal, with the usual one-line error.
        raise CliError(f"no pod is listening on {socket}")

    async def connect() -> PodLink:
        return await PodClient.connect(socket)

    app = PodApp(connect, notices=notices)
    result = app.run()
    if app.return_code:
        raise CliError(app.error_message or "the UI failed")
    return result or "detached"
