"""The chat UI: one Textual app attached to one pod over the JSON-lines protocol.

A background worker connects, replays the pod's history and status, then turns every typed
event into a message for the app; the app applies it to the pure
:class:`~cli.tui.model.ChatModel` and draws what changed. What a key does in each status is
:func:`~cli.tui.keys.decide`; the app carries the decision out (``docs/tui-keybindings.md``).
The double-press windows and notice lifetimes read an injectable clock.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.events import DescendantFocus

from cli.commands.rewind import preview_text
from cli.tui.cards import ApprovalCard, Card, ToolCard
from cli.tui.conversation import Conversation
from cli.tui.editor import ChipEditor, CompletionList, PromptInput
from cli.tui.entries import (
    ApprovalEntry,
    AssistantEntry,
    Change,
    ElicitationEntry,
    ThinkingEntry,
    ToolEntry,
)
from cli.tui.entry_views import AssistantView, EntryView, ThinkingView, view_for
from cli.tui.form_card import FORM_HINT, ElicitationCard
from cli.tui.input import (
    InputChips,
    PromptHistory,
    SlashLine,
    parse_slash,
    rewind_argument,
    run_params,
    unescape_slash,
)
from cli.tui.keys import DOUBLE_PRESS_S, Decision, Key, decide, step_card
from cli.tui.link import Attached, Connector, PodEventReceived, PodGone, PodLink
from cli.tui.model import ChatModel
from cli.tui.notices import Notice, NoticeBoard
from cli.tui.status_bar import NoticeLine, StatusBar
from cli.tui.views import (
    children_text,
    help_text,
    model_text,
    pick_child,
    sessions_text,
    status_text,
)
from orchestrator.client import ClientError, PodClient
from orchestrator.mcp.forms import Value
from orchestrator.protocol import (
    ElicitationResolvedData,
    ErrorData,
    HistoryData,
    RewindData,
    ShutdownData,
    StatusData,
    UserMessageData,
)
from orchestrator.segments import Segment

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
        self._clock = clock
        self._startup_notices = list(notices)
        """Warnings from the command line, drawn once the conversation is."""
        self.model = ChatModel()
        self.chips = InputChips()
        self.prompts = PromptHistory()
        self.link: PodLink | None = None
        self.error_message = ""
        self._views: dict[int, EntryView] = {}
        self._armed: dict[Key, float] = {}
        self._board = NoticeBoard()
        self._shutdown_requested = False
        self._runs: dict[str, tuple[str, dict[str, Segment]]] = {}
        self._run_seq = 0
        self._selected_card: int | None = None
        self._deny_for: str | None = None
        """A call whose denial waits for its reason (typed after ``n``)."""
        self._answers: dict[str, str] = {}
        """The request for input each ``answer_elicitation`` sent answers, by its request id
        (to show the pod's refusal on that request's card)."""
        self._rewind_pending: tuple[int, str] | None = None
        """A previewed ``/rewind`` that Enter on an empty line carries out."""
        self.attached = False
        """True once history and status were drawn (tests wait for it)."""

    # -- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        """Conversation, notice, completions and editor, and the status line, top to bottom."""
        yield Conversation(id="conversation")
        yield NoticeLine(id="notice", classes="-empty")
        yield PromptInput(self.chips, self.prompts, submit=self._submit, complete=self._complete)
        yield StatusBar(id="status")

    def on_mount(self) -> None:
        """Editor focused, status drawn, then connect."""
        self.status_bar.show(self.model.pod)
        self.editor.approval_waiting = self._approval_waiting
        self.editor.input_waiting = self._input_waiting
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
    def _closing_down(self) -> bool:
        # Events still queued when the UI exits must not touch widgets that are gone.
        return self.return_value is not None or not self.is_running or not self.screen_stack

    async def on_attached(self, message: Attached) -> None:
        """Draw the replayed history and the status."""
        if self._closing_down:
            return
        await self._draw_history(message.status, message.history)
        if self._closing_down:
            return
        self._show_status()
        if self._startup_notices:
            self._say(Notice(self._startup_notices[-1], "warn", ttl=None, while_status=False))
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
        conversation = self.conversation
        await conversation.clear_entries()
        self._views = {i: view_for(entry) for i, entry in enumerate(self.model.entries)}
        if self._views:
            await conversation.mount_all(self._views.values())
        conversation.follow()

    async def on_pod_event_received(self, message: PodEventReceived) -> None:
        """Apply one event to the model and draw the change."""
        if self._closing_down:
            return
        event = message.event
        payload = event.payload
        if isinstance(payload, ErrorData):
            self._on_error(payload)
            return
        if isinstance(payload, ElicitationResolvedData):
            self._answers = {k: v for k, v in self._answers.items() if v != payload.id}
        if event.event == "rewound" and isinstance(payload, RewindData):
            await self._after_rewind(payload)
            return
        if isinstance(payload, UserMessageData):
            # Up/Down recall what the conversation holds, as committed (a typed @path comes
            # back as a chip), whichever client sent it.
            self._runs.clear()
            self.chips.saw(list(payload.segments))
            if payload.seq is None or payload.seq > self.model.replayed_seq:
                self.prompts.add(list(payload.segments))
        self.model.now = self._clock()
        await self._draw(self.model.apply(event))
        if self._closing_down:
            return
        self._show_status()
        if isinstance(payload, ShutdownData) and self._shutdown_requested:
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
        self._show_status()
        if self._shutdown_requested:
            self.exit("shutdown")
            return
        await self._draw([self.model.info("The connection to the pod closed.")])
        self._say(Notice("The pod is gone: press Ctrl-C to quit", "warn", ttl=None))

    async def _draw(self, changes: list[Change]) -> None:
        conversation = self.conversation
        for change in changes:
            if self._closing_down:
                return
            entry = self.model.entries[change.index]
            if change.kind == "added":
                view = view_for(entry)
                self._views[change.index] = view
                await conversation.mount(view)
                continue
            current = self._views[change.index]
            if isinstance(entry, AssistantEntry) and isinstance(current, AssistantView):
                if change.kind == "appended":
                    current.stream(change.text)
                    continue
                if not entry.streaming:
                    current.finish(entry.text)
                current.refresh_from(entry)
            elif isinstance(entry, ToolEntry) and isinstance(current, ToolCard):
                # Separate branches keep each refresh_from call type-checked.
                current.refresh_from(entry)
            elif isinstance(entry, ThinkingEntry) and isinstance(current, ThinkingView):  # noqa: SIM114
                current.refresh_from(entry)
            elif isinstance(entry, ApprovalEntry) and isinstance(current, ApprovalCard):
                current.refresh_from(entry)
            elif isinstance(entry, ElicitationEntry) and isinstance(current, ElicitationCard):
                in_form = self.focused is not None and current in self.focused.ancestors
                current.refresh_from(entry)
                if in_form and not entry.waiting:  # answered here or elsewhere, or withdrawn
                    self.editor.focus(scroll_visible=False)
                    self._say(None)  # the form's keys no longer apply

    def _on_error(self, error: ErrorData) -> None:
        input_id = self._answers.pop(str(error.id), None)
        if input_id is not None:
            self._refused(input_id, error.message)
            return
        run = self._runs.pop(str(error.id), None)
        self.model.pod.run_sent = False  # a refused run or resume left the pod as it was
        if run is not None and not self.editor.text.strip():
            # The pod refused our run (e.g. another client started a turn first): give the
            # input back rather than losing it.
            text, chips = run
            self.chips.chips.update(chips)
            self.editor.load_text(text)
            self.editor.move_cursor(self.editor.document.end)
        self._say(Notice(f"pod: {error.message}", "error"))

    async def _send(self, method: str, params: dict[str, Any] | None = None, **kw: Any) -> bool:
        if self.link is None or not self.model.pod.connected:
            self._say(Notice("Not connected to a pod", "error"))
            return False
        try:
            await self.link.send(method, params, **kw)
        except ClientError as exc:
            self._say(Notice(str(exc), "error"))
            return False
        if method in ("run", "resume"):
            self.model.pod.run_sent = True
        return True

    async def _complete(self, prefix: str) -> list[str]:
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

    def _say(self, notice: Notice | None) -> None:
        """Show a notice (None clears the line) until it expires or the state moves on."""
        self._board.show(notice, status=self.model.pod.key_status, now=self._clock())
        self._show_notice()

    def _show_notice(self) -> None:
        notice = self._board.current(status=self.model.pod.key_status, now=self._clock())
        if notice is None:
            self.notice.say("")
        else:
            self.notice.say(notice.text, level=notice.level)

    def _show_status(self) -> None:
        self.status_bar.show(self.model.pod, self._clock())
        self._show_notice()

    def _tick(self) -> None:
        if not self._closing_down:
            self._show_status()

    # -- keys --------------------------------------------------------------------------------

    async def action_press(self, key: str) -> None:
        """Ctrl-C, Ctrl-X, Ctrl-D: whatever :func:`decide` says for the pod's status."""
        await self._carry_out(self._decide(Key(key)))

    def _decide(self, key: Key, *, blank: bool = True) -> Decision:
        now = self._clock()
        opened = self._armed.pop(key, None)
        repeated = opened is not None and now - opened <= DOUBLE_PRESS_S
        decision = decide(key, self.model.pod.key_status, repeated=repeated, blank=blank)
        if decision.arm:
            self._armed[key] = now
        return decision

    async def _carry_out(
        self, decision: Decision, params: dict[str, Any] | None = None, *, id: str | None = None
    ) -> bool:
        """Do what a key decided; True when its method was sent."""
        if decision.exit is not None:
            self.exit(decision.exit)
            return False
        sent = False
        if decision.send is not None:
            self._shutdown_requested = decision.send == "shutdown"
            sent = await self._send(decision.send, params, id=id)
            if not sent:
                self._shutdown_requested = False
                return False
        if sent or decision.notice is not None:
            self._say(decision.notice)
        return sent

    async def _submit(self, text: str) -> bool:
        """Enter in the editor: a slash command, ``run``, or ``resume``; True takes the text.

        After ``n`` on a waiting tool call, the text is the reason it is denied.
        """
        if self._rewind_pending is not None:
            (to, mode), self._rewind_pending = self._rewind_pending, None
            if not text.strip():
                await self._send("rewind", {"to": to, "restore": mode})
                return True
            self._say(Notice("Rewind dropped"))
        if self._deny_for is not None:
            call_id, self._deny_for = self._deny_for, None
            if await self._send("deny", {"id": call_id, "message": text.strip()}):
                self._say(Notice("Denied"))
            return True
        slash = parse_slash(text)
        if slash is not None:
            return await self._slash(slash)
        message = unescape_slash(text).strip()
        segments = self.chips.segments(message)
        params = run_params(segments)
        decision = self._decide(Key.SUBMIT, blank=params is None)
        if decision.send != "run" or params is None:
            await self._carry_out(decision)
            return False
        self._run_seq += 1
        run_id = f"ui-run-{self._run_seq}"
        self._runs[run_id] = (text, dict(self.chips.chips))
        wire = params.model_dump(mode="json", exclude={"input"})
        if not await self._carry_out(decision, wire, id=run_id):
            self._runs.pop(run_id, None)
            return False
        self.model.pod.last_alert = ""  # alerts about the previous turn are no longer news
        self.conversation.follow()
        return True

    async def _after_rewind(self, data: RewindData) -> None:
        """Draw the conversation as it now is; the rewound prompt goes back in the editor."""
        if self.link is None:
            return
        try:
            status, history = await self.link.status(), await self.link.history()
        except (ClientError, TimeoutError) as exc:
            self._say(Notice(f"rewound, but the history did not come: {exc}", "error"))
            return
        self._startup_notices = []
        await self._draw_history(status, history)
        self._show_status()
        if data.restore != "code" and not self.editor.text.strip():
            self.editor.load_text(data.prompt)
            self.editor.move_cursor(self.editor.document.end)
        files = data.files
        changed = (
            f"; files: {len(files.restored)} restored, {len(files.deleted)} deleted"
            if files
            else ""
        )
        self._say(Notice(f"Rewound to before prompt {data.to}{changed}"))

    async def _rewind_command(self, argument: str) -> None:
        """``/rewind``: the prompts to go back to; ``/rewind N [MODE]``: a preview to confirm."""
        if self.link is None:
            self._say(Notice("Not connected to a pod", "error"))
            return
        if not argument:
            history = await self.link.history()
            rows = [
                f"  {item['seq']:>5}  {' '.join(str(item.get('text', '')).split())[:70]}"
                for item in history.items
                if item.get("kind") == "user_message"
            ]
            text = "Prompts to rewind to (/rewind N, or /rewind N code|conversation):\n"
            await self._draw([self.model.info(text + ("\n".join(rows) or "  (none yet)"))])
            self.conversation.follow()
            return
        parsed = rewind_argument(argument)
        if parsed is None:
            self._say(Notice("Use /rewind N, /rewind N code or /rewind N conversation", "error"))
            return
        to, mode = parsed
        reply = await self.link.request("rewind", {"to": to, "restore": mode, "dry_run": True})
        if isinstance(reply.payload, ErrorData):
            self._say(Notice(reply.payload.message, "error"))
            return
        preview = preview_text(reply.data, done=False)
        await self._draw([self.model.info(preview)])
        self.conversation.follow()
        self._rewind_pending = (to, mode)
        self._say(
            Notice(
                "Enter on an empty line rewinds; anything else keeps things as they are", ttl=None
            )
        )

    async def _fork_command(self, argument: str) -> None:
        if self.link is None:
            self._say(Notice("Not connected to a pod", "error"))
            return
        reply = await self.link.request("fork", {"name": argument} if argument else {})
        if isinstance(reply.payload, ErrorData):
            self._say(Notice(reply.payload.message, "error"))
            return
        await self._draw(
            [
                self.model.info(
                    f"Forked: session {reply.data['session']}. Continue it with: pod chat "
                    f"--session {reply.data['path']}"
                )
            ]
        )
        self.conversation.follow()

    async def _slash(self, line: SlashLine) -> bool:
        """Run a slash command in the UI; it is never sent to the model."""
        command = line.command
        if command is None:
            self._say(
                Notice(
                    f"Unknown command /{line.name}: /help lists the commands "
                    f"(type //{line.name} to send it as a message)",
                    "error",
                )
            )
            return False
        if command.key is not None:
            await self.action_press(command.key)
        elif command.method is not None:
            params = {command.argument: line.argument} if command.argument and line.argument else {}
            if await self._send(command.method, params):
                self._say(Notice(f"/{command.name} sent"))
        elif command.view == "rewind":
            await self._rewind_command(line.argument)
        elif command.view == "fork":
            await self._fork_command(line.argument)
        elif command.view == "attach":
            self._attach_command(line.argument)
        elif command.view is not None:
            self._show_view(command.view)
        return True

    @work(group="views")
    async def _show_view(self, view: str) -> None:
        pod = self.model.pod
        if view == "help":
            text = help_text()
        elif view == "status":
            if self.link is not None and pod.connected:
                try:
                    pod.update(await self.link.status())
                except (ClientError, TimeoutError) as exc:
                    self._say(Notice(f"no status: {exc}", "error"))
                    return
            text = status_text(pod)
        elif view == "children":
            text = children_text(list(pod.children.values()))
        elif view == "model":
            text = model_text(pod)
        else:
            text = await asyncio.to_thread(sessions_text, pod.workspace)
        self._show_status()
        await self._draw([self.model.info(text)])
        self.conversation.follow()

    def _attach_command(self, argument: str) -> None:
        """``/attach NAME``: leave this pod's UI for its child's; leaving that comes back."""
        children = list(self.model.pod.children.values())
        chosen = pick_child(children, argument.strip())
        if chosen is None:
            names = ", ".join(c.name for c in children) or "none runs now"
            self._say(Notice(f"Use /attach NAME with a child pod's name ({names})", "error"))
            return
        self.exit(f"{ATTACH_PREFIX}{chosen.socket}")

    @on(ChipEditor.RewindKey)
    async def _rewind_key(self, message: ChipEditor.RewindKey) -> None:
        """Esc Esc on an empty line: as ``/rewind``."""
        await self._rewind_command("")

    # -- approvals -------------------------------------------------------------------------------

    @on(ChipEditor.ApprovalKey)
    async def _approval_key(self, message: ChipEditor.ApprovalKey) -> None:
        """y / a / n: answer the oldest waiting request (n asks for a reason first)."""
        waiting = self.model.waiting_approvals()
        if not waiting:
            return
        call_id = waiting[0].call_id
        if message.answer == "deny":
            self._deny_for = call_id
            self._say(
                Notice("Why deny? Type a reason and press Enter (Enter alone: no reason)", ttl=None)
            )
            return
        if await self._send("approve", {"id": call_id, "scope": message.answer}):
            self._say(
                Notice("Approved" + (" for this session" if message.answer == "session" else ""))
            )

    def _approval_waiting(self) -> bool:
        return bool(self.model.waiting_approvals()) and self._deny_for is None

    # -- requests for input ---------------------------------------------------------------------

    def _input_waiting(self) -> str | None:
        if self._deny_for is not None:  # the keys type a denial's reason
            return None
        waiting = self.model.waiting_elicitations()
        return waiting[0].request.mode if waiting else None

    def _input_card(self, input_id: str) -> ElicitationCard | None:
        found = self.model.elicitation(input_id)
        view = self._views.get(found[0]) if found is not None else None
        return view if isinstance(view, ElicitationCard) else None

    @on(ChipEditor.ElicitationKey)
    async def _elicitation_key(self, message: ChipEditor.ElicitationKey) -> None:
        """f / o / d / c: into the oldest waiting request's form, or answer it."""
        waiting = self.model.waiting_elicitations()
        if not waiting:
            return
        if message.answer == "fill":
            card = self._input_card(waiting[0].id)
            if card is not None:
                card.focus_form()
                card.scroll_visible(animate=False)
                self._say(Notice(FORM_HINT, ttl=None, while_status=False))
            return
        await self._answer_input(waiting[0].id, message.answer)

    @on(ElicitationCard.Answered)
    async def _card_answered(self, message: ElicitationCard.Answered) -> None:
        await self._answer_input(message.input_id, message.action, message.content)

    @on(ElicitationCard.Leave)
    def _leave_form(self, message: ElicitationCard.Leave) -> None:
        self.editor.focus(scroll_visible=False)
        self._say(None)

    async def _answer_input(
        self, input_id: str, action: str, content: dict[str, Value] | None = None
    ) -> None:
        """Send ``answer_elicitation``; a refusal comes back as an error on the card."""
        self._run_seq += 1
        request_id = f"ui-input-{self._run_seq}"
        params: dict[str, Any] = {"id": input_id, "action": action}
        if content is not None:
            params["content"] = content
        self._answers[request_id] = input_id
        if await self._send("answer_elicitation", params, id=request_id):
            self._say(Notice({"accept": "Sent", "decline": "Declined"}.get(action, "Cancelled")))
        else:
            self._answers.pop(request_id, None)

    def _refused(self, input_id: str, why: str) -> None:
        """The pod refused an answer (the request keeps waiting, unless it is over)."""
        found = self.model.elicitation(input_id)
        card = self._input_card(input_id)
        if found is not None and card is not None and found[1].waiting:
            found[1].refused = why
            card.refresh_from(found[1])
        self._say(Notice(f"pod: {why}", "error"))

    # -- tool cards ------------------------------------------------------------------------------

    @on(ChipEditor.CardKey)
    def _card_key(self, message: ChipEditor.CardKey) -> None:
        cards = self.model.card_indices()
        previous = self._selected_card
        if message.action == "leave":
            self._selected_card = None
        elif message.action == "toggle":
            card = self._card(previous)
            if card is not None:
                card.toggle()
            return
        elif not cards:
            self.editor.leave_cards()
            self._say(Notice("No tool cards yet"))
            return
        else:
            step = {"start": 0, "up": -1, "down": 1}[message.action]
            self._selected_card = step_card(cards, previous if step else None, step)
        old, new = self._card(previous), self._card(self._selected_card)
        if old is not None:
            old.remove_class("-selected")
        if new is not None:
            new.add_class("-selected")
            new.scroll_visible(animate=False)
            self._say(
                Notice(
                    "Tool cards: Up/Down choose · Enter expands · Esc returns",
                    ttl=None,
                    while_status=False,
                )
            )
        elif old is not None:
            self._say(None)  # the hint about card keys is no longer true

    def _card(self, index: int | None) -> Card | None:
        view = self._views.get(index) if index is not None else None
        return view if isinstance(view, Card) else None

    def action_nothing(self) -> None:
        """Keys the spec retires (Ctrl-R, and Ctrl-Q so one press never quits)."""

    def action_scroll_conversation(self, pages: int) -> None:
        """PageUp/PageDown scroll the conversation, since the editor is short."""
        if pages < 0:
            self.conversation.scroll_page_up(animate=False)
        else:
            self.conversation.scroll_page_down(animate=False)


ATTACH_PREFIX = "attach:"
"""How the app says, as it exits, which child pod's socket the UI goes to next."""


def run_ui(socket: Path, *, notices: Sequence[str] = ()) -> str:
    """Run the UI attached to the pod on ``socket``; returns how it ended.

    ``notices`` are warnings the command line has for the user (e.g. an option a running pod
    cannot apply): printed before the UI takes the screen they would be lost, so it draws them.
    """
    from cli.errors import CliError
    from orchestrator.server import socket_is_live

    if not socket_is_live(socket):
        # Fail before taking over the terminal, with the usual one-line error.
        raise CliError(f"no pod is listening on {socket}")

    while True:
        result = _run_app(socket, notices)
        notices = ()
        if not result.startswith(ATTACH_PREFIX):
            return result
        child = Path(result.removeprefix(ATTACH_PREFIX))
        if socket_is_live(child):
            run_ui(child)  # its own loop: a grandchild comes back to the child
        # Back to this pod whatever happened there (a child that shut down is gone).


def _run_app(socket: Path, notices: Sequence[str]) -> str:
    from cli.errors import CliError

    async def connect() -> PodLink:
        return await PodClient.connect(socket)

    app = PodApp(connect, notices=notices)
    result = app.run()
    if app.return_code:
        raise CliError(app.error_message or "the UI failed")
    return result or "detached"
