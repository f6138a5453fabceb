"""What the pod asks a person, put to the editor: approving a tool call
(``session/request_permission``) and an MCP server's request for input
(``elicitation/create``). Each is dealt with aside, so the round's other updates keep
flowing, and the pod is always answered: an editor that cannot be asked, or that fails to
answer, means ``deny`` or ``decline``, so the pod never waits for a person nobody asked.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from acp import Client, schema

from cli.acp import chunks, mapping, modes
from cli.acp.session import AcpSession, InputAsked, current_text, resolve

__all__ = ["INPUT_ID", "EditorAsker"]

log = logging.getLogger(__name__)

INPUT_ID = "acp-input:"
"""The request ids of ``answer_elicitation``: this prefix and the request's id, so the pod's
refusal of an answer finds the request it was for."""


class EditorAsker:
    """Puts the pod's questions for a person to the editor over ``conn`` (set once the
    editor connects), within the ``capabilities`` it declared in ``initialize``."""

    def __init__(self) -> None:
        self.conn: Client | None = None
        self.capabilities = schema.ClientCapabilities()

    async def update(self, session_id: str, update: Any) -> None:
        """Send the editor one ``session/update``."""
        assert self.conn is not None
        await self.conn.session_update(session_id=session_id, update=update)

    async def ask_permission(self, session: AcpSession, data: dict[str, Any]) -> None:
        """Ask the editor; answer the pod with ``approve`` or ``deny``."""
        assert self.conn is not None
        call_id = str(data["id"])
        if modes.is_plan(data):
            await self._ask_plan(session, data)
            return
        name, arguments = str(data["tool"]), dict(data["arguments"])
        content: list[Any] = []
        held = mapping.held_content(data)
        if held is not None:
            content.append(held)
        elif data.get("diff"):
            before = current_text(session.workspace, arguments.get("path"))
            diff = mapping.edit_diff(name, arguments, session.workspace, before)
            if diff is not None:
                content.append(diff)
        where = f" — in child pod {data['pod']}" if data.get("pod") else ""
        tool_call = schema.ToolCallUpdate(
            tool_call_id=call_id,
            title=f"{data['summary']} ({data['reason']}){where}",
            kind=mapping.TOOL_KINDS.get(name, "other"),
            status="pending",
            raw_input=arguments,
            content=content or None,
        )
        try:
            response = await self.conn.request_permission(
                session_id=session.id, tool_call=tool_call, options=mapping.permission_options()
            )
        except Exception as exc:  # the editor failed to answer: deny, and say why
            log.warning("permission request for %s failed: %s", call_id, exc)
            await session.client.send(
                "deny", {"id": call_id, "message": "the editor could not be asked", "asked": False}
            )
            return
        method, params = mapping.permission_answer(response)
        await session.client.send(method, {"id": call_id, **params})

    async def _ask_plan(self, session: AcpSession, data: dict[str, Any]) -> None:
        """A plan: shown whole, approved (for a mode) or kept planning."""
        assert self.conn is not None
        call_id = str(data["id"])
        try:
            response = await self.conn.request_permission(
                session_id=session.id,
                tool_call=modes.plan_tool_call(data),
                options=modes.plan_options(),
            )
        except Exception as exc:  # the editor failed to answer: keep planning, and say why
            log.warning("plan approval for %s failed: %s", call_id, exc)
            await session.client.send(
                "deny", {"id": call_id, "message": "the editor could not be asked", "asked": False}
            )
            return
        method, params = modes.plan_answer(response)
        await session.client.send(method, {"id": call_id, **params})

    # -- requests for input (elicitation) ------------------------------------------------

    def _can_elicit(self, mode: str) -> bool:
        """Whether the editor declared it can show requests for input of this mode."""
        capabilities = self.capabilities.elicitation
        if capabilities is None:
            return False
        return (capabilities.url if mode == "url" else capabilities.form) is not None

    def start_input(self, session: AcpSession, data: dict[str, Any]) -> None:
        """Deal with a request for input aside: the round's other events keep flowing."""
        input_id = str(data["id"])
        if input_id in session.inputs:
            return
        asked = InputAsked(mode="url" if data.get("mode") == "url" else "form")
        session.inputs[input_id] = asked
        asked.task = asyncio.create_task(
            self._ask_input(session, input_id, data, asked), name=f"acp-input-{input_id}"
        )

        def forget(_task: asyncio.Task[None]) -> None:
            if session.inputs.get(input_id) is asked:
                del session.inputs[input_id]

        asked.task.add_done_callback(forget)

    async def _ask_input(
        self, session: AcpSession, input_id: str, data: dict[str, Any], asked: InputAsked
    ) -> None:
        """Put a request for input to the editor and answer the pod with what it said; decline
        whatever the editor cannot be asked or answers wrongly, so the pod never waits."""
        assert self.conn is not None
        mode = asked.mode
        asking = f"{data['server']} asked for input ({data['message']!r})"
        if not self._can_elicit(mode):
            kind = "a link to open" if mode == "url" else "a form"
            await self._decline_input(
                session,
                input_id,
                asked,
                f"{asking}, but this editor cannot show {kind} "
                f"(it did not declare elicitation.{mode} in initialize)",
            )
            return
        try:
            request = mapping.elicitation_mode(data, session.id, self._tool_call_of(session, data))
        except ValueError as exc:
            await self._decline_input(
                session, input_id, asked, f"{asking}, but ACP cannot carry it: {exc}"
            )
            return
        asked.shown = True
        try:
            response = await self.conn.create_elicitation(
                message=mapping.elicitation_message(data), mode=request
            )
        except Exception as exc:  # the editor failed to answer: the server is told no
            await self._decline_input(
                session, input_id, asked, f"{asking}, but the editor could not be asked: {exc}"
            )
            return
        action, content = mapping.elicitation_answer(response)
        refusal = await self._answer_input(session, input_id, asked, action, content)
        if refusal:
            # The editor's form let through what the server's schema refuses; asking again
            # could loop, and the pod must not wait, so the server is told no.
            await self._decline_input(
                session,
                input_id,
                asked,
                f"{asking}; the editor's answer was refused ({refusal})",
            )

    async def _decline_input(
        self, session: AcpSession, input_id: str, asked: InputAsked, why: str
    ) -> None:
        """Answer ``decline``, and say why in the log and to the person (as the pod's
        warnings are shown: a thought), as ACP has no other channel for it."""
        log.warning("declined request for input %s: %s", input_id, why)
        refusal = await self._answer_input(session, input_id, asked, "decline", None)
        if refusal:
            log.warning("the pod refused declining %s: %s", input_id, refusal)
        await self.update(session.id, chunks.thought_chunk(f"[pod acp] declined: {why}"))

    async def _answer_input(
        self,
        session: AcpSession,
        input_id: str,
        asked: InputAsked,
        action: mapping.ElicitationAction,
        content: dict[str, Any] | None,
    ) -> str:
        """Answer the pod and wait until it takes the answer (""), or refuses it (why)."""
        if asked.over:
            return ""
        waiter: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        asked.answered = waiter  # the pump resolves it on elicitation_resolved or the refusal
        params: dict[str, Any] = {"id": input_id, "action": action}
        if content is not None:
            params["content"] = content
        await session.client.send("answer_elicitation", params, id=INPUT_ID + input_id)
        return await waiter

    async def input_over(self, session: AcpSession, input_id: str, action: str) -> None:
        """The pod says a request for input is over: if the editor still has it, stop waiting
        for it (its late answer is dropped) and tell the editor where ACP lets us."""
        asked = session.inputs.pop(input_id, None)
        if asked is None:
            return
        asked.over = True
        if asked.answered is not None:
            resolve(asked.answered, "")  # answered from here; nothing is left with the editor
            return
        if asked.task is not None:
            asked.task.cancel()
        if not asked.shown:
            return
        if asked.mode == "url":
            # ACP's way to close a URL request the editor shows. A form has none in this SDK
            # (no request cancellation), so the person is told instead.
            assert self.conn is not None
            await self.conn.complete_elicitation(elicitation_id=input_id)
        else:
            how = "withdrawn" if action == "withdrawn" else f"answered elsewhere ({action})"
            await self.update(
                session.id,
                chunks.thought_chunk(
                    f"[pod acp] the request for input is over ({how}): an answer to it is dropped"
                ),
            )

    @staticmethod
    def _tool_call_of(session: AcpSession, data: dict[str, Any]) -> str | None:
        """The editor's tool call a request comes during, when it can be told: this pod's
        one running call of that tool."""
        if data.get("pod"):
            return None  # a child pod's calls are not the editor's
        ids = [call for call, (name, _) in session.calls.items() if name == data.get("tool")]
        return ids[0] if len(ids) == 1 else None
