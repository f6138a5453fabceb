"""Answers to the cards that wait: a tool call's approval and an MCP server's request for input.

Keys in an empty editor answer the oldest waiting one (``y``/``a``/``n``, ``f``/``o``/``d``/``c``);
a form's own buttons answer its request. The pod may refuse an answer (the request was
withdrawn, or a value does not fit): the refusal is shown on that request's card.
"""

from __future__ import annotations

from typing import Any

from cli.tui.form_card import FORM_HINT, ElicitationCard
from cli.tui.host import AppHost
from cli.tui.keys import ApprovalAnswer, InputAnswer
from cli.tui.notices import Notice
from orchestrator.adapters.mcp.forms import Value


class Answers:
    """Answers approvals and requests for input, and shows the pod's refusals."""

    def __init__(self, host: AppHost) -> None:
        self._host = host
        self._deny_for: str | None = None
        """A call whose denial waits for its reason (typed after ``n``)."""
        self._sent: dict[str, str] = {}
        """The request for input each ``answer_elicitation`` sent answers, by its request id
        (to show the pod's refusal on that request's card)."""
        self._seq = 0

    # -- approvals ---------------------------------------------------------------------------

    async def approval_key(self, answer: ApprovalAnswer) -> None:
        """y / a / n: answer the oldest waiting request (n asks for a reason first)."""
        host = self._host
        waiting = host.model.waiting_approvals()
        if not waiting:
            return
        call_id = waiting[0].call_id
        if waiting[0].plan is not None and answer != "deny":
            # A plan is approved once: "a" approves it for accept-edits (edits then run
            # without asking), "y" for the mode the pod was in before plan.
            params = {"id": call_id, **({"mode": "accept-edits"} if answer == "session" else {})}
            if await host.send("approve", params):
                host.say(
                    Notice("Plan approved" + (": accepting edits" if params.get("mode") else ""))
                )
            return
        if answer == "deny":
            self._deny_for = call_id
            ask = (
                "What should change in the plan? Type it and press Enter"
                if waiting[0].plan is not None
                else "Why deny? Type a reason and press Enter (Enter alone: no reason)"
            )
            host.say(Notice(ask, ttl=None))
            return
        if await host.send("approve", {"id": call_id, "scope": answer}):
            host.say(Notice("Approved" + (" for this session" if answer == "session" else "")))

    async def deny(self, text: str) -> bool:
        """Enter after ``n``: the text is the reason the call is denied (True: it was)."""
        if self._deny_for is None:
            return False
        call_id, self._deny_for = self._deny_for, None
        if await self._host.send("deny", {"id": call_id, "message": text.strip()}):
            self._host.say(Notice("Denied"))
        return True

    def approval_waiting(self) -> bool:
        """Whether y / a / n answer an approval now (not while a denial's reason is typed)."""
        return bool(self._host.model.waiting_approvals()) and self._deny_for is None

    # -- requests for input ------------------------------------------------------------------

    def input_waiting(self) -> str | None:
        """The mode of the oldest waiting request for input, if its keys apply now."""
        if self._deny_for is not None:  # the keys type a denial's reason
            return None
        waiting = self._host.model.waiting_elicitations()
        return waiting[0].request.mode if waiting else None

    async def elicitation_key(self, answer: InputAnswer) -> None:
        """f / o / d / c: into the oldest waiting request's form, or answer it."""
        host = self._host
        waiting = host.model.waiting_elicitations()
        if not waiting:
            return
        if answer == "fill":
            card = self._input_card(waiting[0].id)
            if card is not None:
                card.focus_form()
                card.scroll_visible(animate=False)
                host.say(Notice(FORM_HINT, ttl=None, while_status=False))
            return
        await self.answer_input(waiting[0].id, answer)

    async def answer_input(
        self, input_id: str, action: str, content: dict[str, Value] | None = None
    ) -> None:
        """Send ``answer_elicitation``; a refusal comes back as an error on the card."""
        self._seq += 1
        request_id = f"ui-input-{self._seq}"
        params: dict[str, Any] = {"id": input_id, "action": action}
        if content is not None:
            params["content"] = content
        self._sent[request_id] = input_id
        if await self._host.send("answer_elicitation", params, id=request_id):
            self._host.say(
                Notice({"accept": "Sent", "decline": "Declined"}.get(action, "Cancelled"))
            )
        else:
            self._sent.pop(request_id, None)

    def resolved(self, input_id: str) -> None:
        """A request for input is over: an error for an answer to it is no longer ours."""
        self._sent = {k: v for k, v in self._sent.items() if v != input_id}

    def refused(self, request_id: str, why: str) -> bool:
        """The pod's error for ``request_id``: True when it refused one of our answers.

        The request keeps waiting unless it is over; the refusal shows on its card.
        """
        input_id = self._sent.pop(request_id, None)
        if input_id is None:
            return False
        found = self._host.model.elicitation(input_id)
        card = self._input_card(input_id)
        if found is not None and card is not None and found[1].waiting:
            found[1].refused = why
            card.refresh_from(found[1])
        self._host.say(Notice(f"pod: {why}", "error"))
        return True

    def _input_card(self, input_id: str) -> ElicitationCard | None:
        found = self._host.model.elicitation(input_id)
        view = self._host.view(found[0]) if found is not None else None
        return view if isinstance(view, ElicitationCard) else None
