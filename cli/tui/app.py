"""The chat UI: one Textual app attached to one pod over the JSON-lines protocol.

A background worker connects, replays the pod's history and status, then turns every
broadcast event into a message for the app; the app applies it to the pure
:class:`~cli.tui.model.ChatModel` and draws what changed. Keys follow the pause/resume spec
(see ``docs/tui-keybindings.md``); the double-press windows use an injectable clock.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, ClassVar, Protocol

from textual import on, work
from textual.actions import SkipAction
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Markdown, TextArea
from textual.widgets.markdown import MarkdownStream

from cli.tui.model import (
    AssistantEntry,
    Change,
    ChatModel,
    InputChips,
    ThinkingEntry,
    ToolEntry,
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

    CSS_PATH = "app.tcss"
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
    ) -> None:
        super().__init__()
        self._connect = connect
        self._clock = clock
        self.model = ChatModel()
        self.chips = InputChips()
        self.link: PodLink | None = None
        self.error_message = ""
        self._views: dict[int, Widget] = {}
        self._streams: dict[int, MarkdownStream] = {}
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

    async def on_attached(self, message: Attached) -> None:
        """Draw the replayed history and the status."""
        self.model.pod.update(message.status)
        self.model.load_history(
            list(message.history.get("items") or []), str(message.history.get("greeting", ""))
        )
        conversation = self.query_one("#conversation", VerticalScroll)
        await conversation.remove_children()
        self._views = {i: view_for(entry) for i, entry in enumerate(self.model.entries)}
        self._streams = {}
        if self._views:
            await conversation.mount_all(self._views.values())
        self.status_bar.show(self.model.pod)
        self.attached = True

    async def on_pod_event_received(self, message: PodEventReceived) -> None:
        """Apply one event to the model and draw the change."""
        event = message.event
        if event.event == "error":
            self._on_error(event.data)
            return
        if event.event in ("history", "file_completions"):
            return  # replies to requests that timed out; nothing to draw
        if event.event == "user_message":
            self._runs.clear()
        await self._draw(self.model.apply(event.event, event.data))
        self.status_bar.show(self.model.pod)
        if event.event == "status" and self._transient_notice:
            # "Pausing…" and the like are answered by the status line itself.
            self._say("")
        if event.event == "shutdown" and self._shutdown_requested:
            self.exit("shutdown")

    async def on_pod_gone(self, message: PodGone) -> None:
        """Show that the pod went away; after our own shutdown, leave."""
        if message.error and not self.attached:
            self.error_message = message.error
            self.exit("unreachable", return_code=1)
            return
        await self._draw(self.model.disconnected())
        self.status_bar.show(self.model.pod)
        if self._shutdown_requested:
            self.exit("shutdown")
            return
        await self._draw([self.model.info("The connection to the pod closed.")])
        self._say("The pod is gone: press Ctrl-C to quit", level="warn")

    async def _draw(self, changes: list[Change]) -> None:
        conversation = self.query_one("#conversation", VerticalScroll)
        for change in changes:
            entry = self.model.entries[change.index]
            if change.kind == "added":
                view = view_for(entry)
                self._views[change.index] = view
                await conversation.mount(view)
                if isinstance(entry, AssistantEntry) and entry.streaming:
                    assert isinstance(view, Markdown)
                    self._streams[change.index] = Markdown.get_stream(view)
                continue
            view = self._views[change.index]
            if change.kind == "appended":
                stream = self._streams.get(change.index)
                if stream is not None:
                    await stream.write(change.text)
            elif isinstance(entry, AssistantEntry) and isinstance(view, AssistantView):
                if not entry.streaming:
                    stream = self._streams.pop(change.index, None)
                    if stream is not None:
                        await stream.stop()
                    if view.source != entry.text:
                        await view.update(entry.text)
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

    async def action_submit(self) -> None:
        """Enter: accept a completion, send ``run``, or ``resume`` a paused turn."""
        if self._completion_open:
            self._accept_completion(descend=False)
            return
        if self.focused is not self.editor:
            raise SkipAction()  # let a focused tool card toggle
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
        self.editor.insert_text("\n")

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
        if not self._completion_open:
            raise SkipAction()
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


def run_ui(socket: Path) -> str:
    """Run the UI attached to the pod on ``socket``; returns how it ended."""
    from cli.errors import CliError

    async def connect() -> PodLink:
        return await PodClient.connect(socket)

    app = PodApp(connect)
    result = app.run()
    if app.return_code:
        raise CliError(app.error_message or "the UI failed")
    return result or "detached"
