"""Ctrl-C, Ctrl-X, Ctrl-D and Enter on a prompt, carried out.

What a key means in each status is :func:`~cli.tui.keys.decide` (``docs/tui-keybindings.md``);
this keeps the double-press windows on the app's clock, sends what was decided, and keeps
each prompt it sends until the pod takes it, to give the text back if the pod refuses it.
"""

from __future__ import annotations

from typing import Any

from cli.tui.host import AppHost
from cli.tui.input import run_params, unescape_slash
from cli.tui.keys import DOUBLE_PRESS_S, Decision, Key, decide
from orchestrator.core.segments import Segment, TextSegment


class KeyActions:
    """Decides what a key does now, and does it."""

    def __init__(self, host: AppHost) -> None:
        self._host = host
        self._armed: dict[Key, float] = {}
        """When each key's double-press window opened."""
        self.shutdown_requested = False
        """True once this UI sent ``shutdown``: the pod's going away is then the way out."""
        self._runs: dict[str, tuple[str, dict[str, Segment]]] = {}
        """Prompts sent and not yet in the conversation (text and chips), by request id."""
        self._seq = 0

    async def press(self, key: Key) -> None:
        """Ctrl-C, Ctrl-X, Ctrl-D: whatever :func:`decide` says for the pod's status."""
        await self._carry_out(self._decide(key))

    async def submit(self, text: str) -> bool:
        """Enter on a prompt: ``run``, or ``resume`` on an empty line; True takes the text."""
        host = self._host
        message = unescape_slash(text).strip()
        segments = host.chips.segments(message)
        first = segments[0] if segments else None
        if message != text.strip() and isinstance(first, TextSegment) and len(first.text) > 1:
            # "//x" is text even where the pod has a command x: the "/" stands apart, so the
            # pod does not read the line as an invocation (the model reads the same text).
            segments = [TextSegment(text="/"), TextSegment(text=first.text[1:]), *segments[1:]]
        params = run_params(segments)
        decision = self._decide(Key.SUBMIT, blank=params is None)
        if decision.send != "run" or params is None:
            await self._carry_out(decision)
            return False
        self._seq += 1
        run_id = f"ui-run-{self._seq}"
        self._runs[run_id] = (text, dict(host.chips.chips))
        wire = params.model_dump(mode="json", exclude={"input"})
        if not await self._carry_out(decision, wire, id=run_id):
            self._runs.pop(run_id, None)
            return False
        host.model.pod.last_alert = ""  # alerts about the previous turn are no longer news
        host.conversation.follow()
        return True

    def prompt_committed(self) -> None:
        """A prompt reached the conversation: the pod took what was sent."""
        self._runs.clear()

    def refused(self, request_id: str) -> None:
        """The pod refused ``request_id`` (e.g. another client started a turn first): a
        prompt it carried goes back in the editor rather than being lost, if that is empty."""
        run = self._runs.pop(request_id, None)
        editor = self._host.editor
        if run is not None and not editor.text.strip():
            text, chips = run
            self._host.chips.chips.update(chips)
            editor.load_text(text)
            editor.move_cursor(editor.document.end)

    def _decide(self, key: Key, *, blank: bool = True) -> Decision:
        now = self._host.clock()
        opened = self._armed.pop(key, None)
        repeated = opened is not None and now - opened <= DOUBLE_PRESS_S
        decision = decide(key, self._host.model.pod.key_status, repeated=repeated, blank=blank)
        if decision.arm:
            self._armed[key] = now
        return decision

    async def _carry_out(
        self, decision: Decision, params: dict[str, Any] | None = None, *, id: str | None = None
    ) -> bool:
        """Do what a key decided; True when its method was sent."""
        if decision.exit is not None:
            self._host.exit(decision.exit)
            return False
        sent = False
        if decision.send is not None:
            self.shutdown_requested = decision.send == "shutdown"
            sent = await self._host.send(decision.send, params, id=id)
            if not sent:
                self.shutdown_requested = False
                return False
        if sent or decision.notice is not None:
            self._host.say(decision.notice)
        return sent
