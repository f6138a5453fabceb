"""The pod as an ACP agent: each ACP session is a pod, driven over our own socket protocol.

An editor speaks ACP (JSON-RPC over the agent's stdio, through the ``agent-client-protocol``
SDK); each of its sessions is a pod, either started for the session's ``cwd`` by the
launcher the command line gives (a ``pod serve`` process of its own, so the pod and this
agent use a core each) or, with ``--attach``, one that already runs. The agent is a client of that pod like
any other, so every guarantee of the pod (complete, wire-valid sessions; no command run
twice) holds for editor users unchanged.

``session/cancel`` is our **pause**: the pending ``session/prompt`` answers ``cancelled`` as
ACP requires, and the turn stays resumable; the next prompt closes it the way Paused→Run
does. ``/cancel`` cancels for good.

A request for input of an MCP server (``elicitation_request``) is put to the editor as
``elicitation/create`` when it declared it can show that kind (form or URL), and declined at
once when it did not, so the pod never waits for a person nobody asked.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from importlib.metadata import version
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, Client, RequestError, schema

from cli.acp import mapping
from cli.acp.session import (
    AcpOptions,
    AcpSession,
    InputAsked,
    LaunchedPod,
    PodLaunchError,
    current_text,
    resolve,
    settle,
)
from orchestrator.core.history import item_from_json
from orchestrator.protocol import CompactionData
from orchestrator.runtime.status import status_text
from orchestrator.serving.client import ClientError, PodClient, PodEvent

log = logging.getLogger(__name__)

RUN_ID = "acp-run"
"""The request id of a prompt's ``run``, to tell its refusal from other errors."""
CANCEL_ID = "acp-cancel"
REWIND_ID = "acp-rewind"
"""The request id of ``/cancel``'s ``cancel``, to tell its refusal apart."""
INPUT_ID = "acp-input:"
"""The request ids of ``answer_elicitation``: this prefix and the request's id, so the pod's
refusal of an answer finds the request it was for."""


class PodAgent:
    """The ACP ``Agent`` side: sessions are pods; updates are pod events, mapped."""

    def __init__(self, options: AcpOptions) -> None:
        self.options = options
        self.sessions: dict[str, AcpSession] = {}
        self._conn: Client | None = None
        self._capabilities = schema.ClientCapabilities()
        self._numbers = itertools.count(1)

    def on_connect(self, conn: Client) -> None:
        """Keep the connection to the editor, for updates and permission requests."""
        self._conn = conn

    # -- lifecycle ------------------------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: schema.ClientCapabilities | None = None,
        client_info: schema.Implementation | None = None,
        **kwargs: Any,
    ) -> schema.InitializeResponse:
        """What this agent can do: load sessions, and take files as links or embedded text."""
        # Kept for requests for input: only the kinds the editor declared are put to it.
        self._capabilities = client_capabilities or schema.ClientCapabilities()
        return schema.InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=schema.AgentCapabilities(
                load_session=True,
                # session/fork is still unstable in ACP; editors that speak it get it.
                session_capabilities=schema.SessionCapabilities(
                    fork=schema.SessionForkCapabilities()
                ),
                prompt_capabilities=schema.PromptCapabilities(
                    embedded_context=True, image=False, audio=False
                ),
            ),
            agent_info=schema.Implementation(
                name="pod-orchestrator", title="pod", version=version("pod-orchestrator")
            ),
        )

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> schema.NewSessionResponse:
        """A new conversation in ``cwd``: a pod with a new session file."""
        session = await self._open(
            Path(cwd), session=None, mcp=mapping.mcp_servers_config(mcp_servers or [])
        )
        return schema.NewSessionResponse(session_id=session.id)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> schema.LoadSessionResponse:
        """An earlier conversation (a name from ``pod sessions ls``), replayed as updates."""
        from orchestrator.adapters.session import SessionError, resolve_session

        workspace = Path(cwd)
        if session_id in self.sessions:
            raise RequestError.invalid_params({"message": f"session {session_id} is open"})
        try:
            path = resolve_session(workspace, session_id)
        except SessionError as exc:
            raise RequestError.resource_not_found(session_id) from exc
        session = await self._open(
            workspace, session=path, mcp=mapping.mcp_servers_config(mcp_servers or [])
        )
        history = await session.client.history()
        items = [item_from_json(raw) for raw in history.items]
        for update in mapping.history_updates(items, workspace):
            await self._update(session.id, update)
        return schema.LoadSessionResponse()

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> schema.ForkSessionResponse:
        """``session/fork``: a new session holding this one's conversation, in a pod of its
        own; the original goes on untouched."""
        source = self._session(session_id)
        # The fork is a session of the folder its pod serves (the editor's cwd), so it is
        # found there again (`pod sessions ls`, session/load), wherever the original runs.
        params = {"workspace": str(Path(cwd).resolve())} if Path(cwd).is_absolute() else {}
        reply = await source.client.request("fork", params)
        if reply.event == "error":
            raise RequestError.invalid_request({"message": str(reply.data.get("message"))})
        forked = await self._open(
            Path(cwd),
            session=Path(str(reply.data["path"])),
            mcp=mapping.mcp_servers_config(mcp_servers or []),
        )
        return schema.ForkSessionResponse(session_id=forked.id)

    async def _open(
        self, workspace: Path, *, session: Path | None, mcp: dict[str, Any]
    ) -> AcpSession:
        pod: LaunchedPod | None = None
        if self.options.attach is not None:
            socket = self.options.attach
            if mcp:
                log.warning(
                    "the editor's MCP servers (%s) are not added to a pod that already runs",
                    ", ".join(mcp),
                )
        elif self.options.launch is not None:
            try:
                pod = await self.options.launch(workspace, session, mcp)
            except PodLaunchError as exc:
                raise RequestError.internal_error({"message": str(exc)}) from exc
            socket = pod.socket
        else:
            raise RequestError.internal_error({"message": "this agent cannot start pods"})
        try:
            client = await PodClient.connect(socket)
        except ClientError as exc:
            raise RequestError.internal_error({"message": str(exc)}) from exc
        # Asked of the pod itself: its info file is written after its socket listens, so a
        # quick client could read none yet (and name the session wrongly).
        try:
            status = await client.status()
        except ClientError as exc:
            await client.close()
            raise RequestError.internal_error({"message": str(exc)}) from exc
        session_id = Path(status.session).stem or f"session-{next(self._numbers)}"
        if session is not None and session_id != session.stem:
            await client.close()
            raise RequestError.invalid_params(
                {"message": f"the attached pod runs session {session_id}, not {session.stem}"}
            )
        opened = AcpSession(id=session_id, workspace=workspace, client=client, pod=pod)
        opened.pump = asyncio.create_task(self._pump(opened), name=f"acp-pump-{session_id}")
        self.sessions[session_id] = opened
        await self._update(session_id, mapping.available_commands())
        return opened

    async def close(self) -> None:
        """The editor went away: shut the pods this agent started (their sessions stay)."""
        for session in list(self.sessions.values()):
            if session.pod is not None:
                with contextlib.suppress(ClientError):
                    await session.client.send("shutdown")
                await session.pod.stop()
            if session.pump is not None:
                session.pump.cancel()
            await session.client.close()
        self.sessions.clear()

    # -- prompts ----------------------------------------------------------------------------

    async def prompt(
        self, session_id: str, prompt: list[Any], **kwargs: Any
    ) -> schema.PromptResponse:
        """Run one turn (or answer a slash command) and say how it stopped."""
        session = self._session(session_id)
        command = mapping.slash_command(prompt)
        running = session.prompt is not None and not session.prompt.done()
        # /cancel is the hard stop of a running prompt, so it is the one prompt taken mid-turn.
        if running and (command is None or command[0] != "cancel"):
            raise RequestError.invalid_request(
                {"message": "a prompt is already running in this session"}
            )
        if command is not None:
            return await self._command(session, *command)
        try:
            segments = mapping.prompt_segments(prompt, session.workspace)
        except mapping.PromptRejected as exc:
            raise RequestError.invalid_params({"message": str(exc)}) from exc
        waiter: asyncio.Future[tuple[str, str]] = asyncio.get_running_loop().create_future()
        session.prompt = waiter
        session.failure = ""
        params = {"segments": [s.model_dump(mode="json") for s in segments]}
        await session.client.send("run", params, id=RUN_ID)
        result, message = await waiter
        reason = mapping.stop_reason(result)
        if reason is None:
            raise RequestError.internal_error({"message": message or f"the turn {result}"})
        return schema.PromptResponse(stop_reason=reason)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """``session/cancel``: pause the turn, so the next prompt can still close it cleanly."""
        session = self.sessions.get(session_id)
        if session is None:
            return  # a notification has no answer; an unknown id is only logged
        await session.client.send("pause")

    async def _command(
        self, session: AcpSession, name: str, argument: str
    ) -> schema.PromptResponse:
        client = session.client
        if name == "cancel":
            text = await self._cancel(session)
        elif name == "status":
            text = status_text((await client.status()).model_dump(exclude={"id"}))
        elif name == "rewind":
            text = await self._rewind(session, argument)
        elif name == "fork":
            reply = await client.request("fork", {"name": argument} if argument else {})
            text = (
                f"Not forked: {reply.data['message']}"
                if reply.event == "error"
                else f"Forked: session {reply.data['session']} ({reply.data['path']})"
            )
        else:
            text = await self._compact(session, argument)
        await self._update(session.id, mapping.message_chunk(text))
        return schema.PromptResponse(stop_reason="end_turn")

    async def _cancel(self, session: AcpSession) -> str:
        """``cancel``, and what came of it: the pod refuses it when no turn runs (paused too)."""
        outcome: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        session.cancelling = outcome  # the pump resolves it on turn_end or on the refusal
        await session.client.send("cancel", id=CANCEL_ID)
        try:
            refusal = await asyncio.wait_for(outcome, 30)
        except TimeoutError:
            return "The pod did not answer the cancel."
        finally:
            session.cancelling = None
        if not refusal:
            return "Cancelled the turn."
        status = (await session.client.status()).status
        if status == "paused":
            return (
                "Nothing is running to cancel: the turn is paused, and your next prompt closes it."
            )
        return f"Nothing to cancel ({refusal})."

    async def _rewind(self, session: AcpSession, argument: str) -> str:
        """``/rewind``: the prompts to go back to; ``/rewind N [MODE]``: do it (an editor's
        command is its own confirmation) and say what changed."""
        client = session.client
        if not argument:
            items = (await client.history()).items
            rows = [
                f"{item['seq']}: {' '.join(str(item.get('text', '')).split())[:70]}"
                for item in items
                if item.get("kind") == "user_message"
            ]
            return "Prompts to rewind to (/rewind N):\n" + ("\n".join(rows) or "(none yet)")
        parts = argument.split()
        mode = parts[1] if len(parts) == 2 else "both"
        if not parts[0].isdigit() or len(parts) > 2 or mode not in ("both", "code", "conversation"):
            return "Use /rewind N, /rewind N code or /rewind N conversation"
        params = {"to": int(parts[0]), "restore": mode}
        preview = await client.request("rewind", {**params, "dry_run": True})
        if preview.event == "error":
            return f"Not rewound: {preview.data['message']}"
        outcome: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        session.rewinding = outcome  # the pump resolves it on rewound or an error
        await client.send("rewind", params, id=REWIND_ID)
        try:
            return await asyncio.wait_for(outcome, 120)
        except TimeoutError:
            return "The pod did not finish the rewind in time."
        finally:
            session.rewinding = None

    async def _compact(self, session: AcpSession, focus: str) -> str:
        waiter: asyncio.Future[tuple[str, str]] = asyncio.get_running_loop().create_future()
        session.prompt = waiter  # the pump resolves it on the compaction or its alert
        await session.client.send("compact", {"focus": focus} if focus else {}, id=RUN_ID)
        kind, message = await waiter
        return message if kind == "compacted" else f"Not compacted: {message}"

    # -- pod events -> session updates --------------------------------------------------------

    async def _pump(self, session: AcpSession) -> None:
        client = session.client
        try:
            while (event := await client.next_event()) is not None:
                for each in mapping.coalesce_deltas([event, *client.ready_events()]):
                    await self._on_event(session, each)
        except Exception:  # a broken editor connection must not leave the prompt hanging
            log.exception("forwarding events of session %s failed", session.id)
        finally:
            settle(session, "errored", "the pod closed the connection")
            # Nothing will say these are over any more: the editor's answers have nowhere to go.
            for asked in session.inputs.values():
                if asked.task is not None:
                    asked.task.cancel()
            session.inputs.clear()

    async def _on_event(self, session: AcpSession, event: PodEvent) -> None:
        data = event.data
        name = event.event
        if name == "text_delta":
            await self._update(session.id, mapping.message_chunk(str(data["text"])))
        elif name == "thinking_delta":
            await self._update(session.id, mapping.thought_chunk(str(data["text"])))
        elif name == "tool_call_done":
            await self._tool_call(session, str(data["id"]), str(data["name"]), data["arguments"])
        elif name == "tool_output_delta":
            call_id = str(data["id"])
            session.output[call_id] = session.output.get(call_id, "") + str(data["text"])
            await self._update(session.id, mapping.tool_output(call_id, session.output[call_id]))
        elif name == "tool_result":
            await self._tool_result(session, data)
        elif name == "approval_request":
            # Asked aside: the other calls of the round keep streaming their updates meanwhile.
            asking = asyncio.create_task(self._ask_permission(session, data))
            session.asking.add(asking)
            asking.add_done_callback(session.asking.discard)
        elif name == "approval_resolved" and data.get("decision") == "approved":
            await self._update(session.id, mapping.tool_running(str(data["id"])))
        elif name == "elicitation_request":
            self._start_input(session, data)
        elif name == "elicitation_resolved":
            await self._input_over(session, str(data["id"]), str(data["action"]))
        elif name == "error" and str(data.get("id") or "").startswith(INPUT_ID):
            input_id = str(data["id"]).removeprefix(INPUT_ID)
            refusal = f"{data['code']}: {data['message']}"
            asked = session.inputs.get(input_id)
            if asked is not None:
                resolve(asked.answered, refusal)
            else:  # nothing is sent for a request that is over: say so if it was
                log.warning("the pod refused an answer to %s, which is over: %s", input_id, refusal)
        elif name == "run_end":
            result = str(data["result"])
            settle(session, result, session.failure if result == "errored" else "")
            session.failure = ""
        elif name == "turn_end":
            resolve(session.cancelling, "")
        elif name == "compaction":
            done = CompactionData.model_validate(data)
            settle(
                session,
                "compacted",
                f"Compacted items {done.first_seq}-{done.last_seq}: about "
                f"{done.tokens_before:,} → {done.tokens_after:,} tokens.",
            )
        elif name == "rewound":
            files = data.get("files")
            changed = (
                f"; files: {len(files['restored'])} restored, {len(files['deleted'])} deleted"
                if files
                else ""
            )
            resolve(
                session.rewinding,
                f"Rewound to before prompt {data['to']}{changed}. The prompt was:\n{data['prompt']}",
            )
        elif (name == "error" and data.get("id") == REWIND_ID) or (
            name == "alert" and data.get("source") == "rewind" and session.rewinding is not None
        ):
            resolve(session.rewinding, f"Not rewound: {data['message']}")
        elif name == "error" and data.get("id") == CANCEL_ID:
            resolve(session.cancelling, f"{data['code']}: {data['message']}")
        elif name == "error" and data.get("id") == RUN_ID:
            settle(session, "errored", f"{data['code']}: {data['message']}")
        elif name == "error" and data.get("id") is None:
            # A turn that fails says why in an error of its own, just before its run_end.
            session.failure = f"{data['code']}: {data['message']}"
        elif name == "alert":
            if data.get("source") == "compaction" and data.get("level") in ("info", "error"):
                settle(session, "not compacted", str(data["message"]))
            if data.get("level") in ("warn", "error"):
                await self._update(
                    session.id, mapping.thought_chunk(f"[pod {data['level']}] {data['message']}")
                )
        elif name == "shutdown":
            settle(session, "cancelled", "")

    async def _tool_call(
        self, session: AcpSession, call_id: str, name: str, arguments: dict[str, Any]
    ) -> None:
        session.calls[call_id] = (name, arguments)
        if name in ("edit_file", "write_file"):
            session.before[call_id] = current_text(session.workspace, arguments.get("path"))
        await self._update(
            session.id, mapping.tool_call(call_id, name, arguments, session.workspace)
        )

    async def _tool_result(self, session: AcpSession, data: dict[str, Any]) -> None:
        call_id = str(data["id"])
        name, arguments = session.calls.pop(call_id, ("", {}))
        before = session.before.pop(call_id, None)
        session.output.pop(call_id, None)
        diff = (
            mapping.edit_diff(name, arguments, session.workspace, before)
            if name in ("edit_file", "write_file")
            else None
        )
        update = mapping.tool_finished(
            call_id,
            str(data["summary"]),
            data.get("content"),
            is_error=bool(data["is_error"]),
            diff=diff,
        )
        await self._update(session.id, update)

    async def _ask_permission(self, session: AcpSession, data: dict[str, Any]) -> None:
        """Ask the editor; answer the pod with ``approve`` or ``deny``."""
        assert self._conn is not None
        call_id = str(data["id"])
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
            response = await self._conn.request_permission(
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

    # -- requests for input (elicitation) ------------------------------------------------

    def _can_elicit(self, mode: str) -> bool:
        """Whether the editor declared it can show requests for input of this mode."""
        capabilities = self._capabilities.elicitation
        if capabilities is None:
            return False
        return (capabilities.url if mode == "url" else capabilities.form) is not None

    def _start_input(self, session: AcpSession, data: dict[str, Any]) -> None:
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
        assert self._conn is not None
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
            response = await self._conn.create_elicitation(
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
        await self._update(session.id, mapping.thought_chunk(f"[pod acp] declined: {why}"))

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

    async def _input_over(self, session: AcpSession, input_id: str, action: str) -> None:
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
            assert self._conn is not None
            await self._conn.complete_elicitation(elicitation_id=input_id)
        else:
            how = "withdrawn" if action == "withdrawn" else f"answered elsewhere ({action})"
            await self._update(
                session.id,
                mapping.thought_chunk(
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

    # -- helpers ---------------------------------------------------------------------------

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"message": f"unknown session {session_id!r}"})
        return session

    async def _update(self, session_id: str, update: Any) -> None:
        assert self._conn is not None
        await self._conn.session_update(session_id=session_id, update=update)
