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

from cli.acp import chunks, editor_files, mapping, modes, options, web
from cli.acp.asking import INPUT_ID, EditorAsker
from cli.acp.commands import CANCEL_ID, REWIND_ID, RUN_ID, offer_commands, run_command
from cli.acp.plan import plan_update
from cli.acp.session import (
    AcpOptions,
    AcpSession,
    LaunchedPod,
    PodLaunchError,
    current_text,
    resolve,
    settle,
)
from cli.acp.session_methods import SessionMethods, auth_methods, pod_models, shown_options
from cli.compaction_text import compaction_text
from orchestrator.core.history import item_from_json
from orchestrator.protocol import CompactionData
from orchestrator.serving.client import ClientError, PodClient, PodEvent

log = logging.getLogger(__name__)


class PodAgent(SessionMethods):
    """The ACP ``Agent`` side: sessions are pods; updates are pod events, mapped. The
    session methods beside prompting are :class:`~cli.acp.session_methods.SessionMethods`."""

    def __init__(self, options: AcpOptions) -> None:
        self.options = options
        self.sessions: dict[str, AcpSession] = {}
        self._asker = EditorAsker()
        """Puts approvals and requests for input to the editor; holds the connection."""
        self._numbers = itertools.count(1)
        self._offered: dict[str, list[str]] = {}
        """The pod's custom commands each session was last offered (names, in order)."""

    def on_connect(self, conn: Client) -> None:
        """Keep the connection to the editor, for updates and permission requests."""
        self._asker.conn = conn

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
        self._asker.capabilities = client_capabilities or schema.ClientCapabilities()
        return schema.InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=schema.AgentCapabilities(
                load_session=True,
                # session/fork is still unstable in ACP; editors that speak it get it.
                session_capabilities=schema.SessionCapabilities(
                    fork=schema.SessionForkCapabilities(),
                    list=schema.SessionListCapabilities(),
                    resume=schema.SessionResumeCapabilities(),
                    close=schema.SessionCloseCapabilities(),
                ),
                prompt_capabilities=schema.PromptCapabilities(
                    embedded_context=True, image=False, audio=False
                ),
            ),
            auth_methods=auth_methods(),
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
        return schema.NewSessionResponse(
            session_id=session.id,
            modes=modes.mode_state(session.mode),
            config_options=shown_options(session),
        )

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
        return schema.LoadSessionResponse(
            modes=modes.mode_state(session.mode), config_options=shown_options(session)
        )

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
        return schema.ForkSessionResponse(
            session_id=forked.id,
            modes=modes.mode_state(forked.mode),
            config_options=shown_options(forked),
        )

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
        taken = self.sessions.get(session_id)
        if taken is not None and Path(taken.workspace).resolve() != workspace.resolve():
            # Session ids are file names; two folders' sessions of one name (started in the
            # same second before names were made unique) must not share one entry here, or
            # one's prompts would go to the other's pod.
            await client.close()
            if pod is not None:
                await pod.stop()
            raise RequestError.invalid_params(
                {
                    "message": f"a session named {session_id} of another folder "
                    f"({taken.workspace}) is open in this connection: close it first"
                }
            )
        if session is not None and session_id != session.stem:
            await client.close()
            raise RequestError.invalid_params(
                {"message": f"the attached pod runs session {session_id}, not {session.stem}"}
            )
        opened = AcpSession(
            id=session_id, workspace=workspace, client=client, pod=pod, mode=status.permission_mode
        )
        opened.settings = options.settings_of(status.model_dump())
        opened.models = await pod_models(client)
        files = editor_files.serves_files(self._asker.capabilities)
        terminal = editor_files.serves_terminal(self._asker.capabilities)
        if files or terminal:
            # The pod's file tools and bash go through the editor (docs/acp.md).
            await client.request("offer_client_io", {"files": files, "terminal": terminal})
        opened.pump = asyncio.create_task(self._pump(opened), name=f"acp-pump-{session_id}")
        self.sessions[session_id] = opened
        await offer_commands(opened, self._offered, self._update, always=True)
        if status.todos:  # a loaded or forked session's list, as the editor's plan
            await self._update(session_id, plan_update(status.todos))
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
        # A command file or an MCP server's prompt list may have changed meanwhile.
        await offer_commands(session, self._offered, self._update)
        return schema.PromptResponse(stop_reason=reason)

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> schema.SetSessionModeResponse:
        """``session/set_mode``: the pod's ``set_mode`` (refused as the pod refuses it)."""
        session = self._session(session_id)
        reply = await session.client.request("set_mode", {"mode": mode_id})
        if reply.event == "error":
            raise RequestError.invalid_params({"message": str(reply.data.get("message"))})
        session.mode = str(reply.data.get("permission_mode", mode_id))
        return schema.SetSessionModeResponse()

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """``session/cancel``: pause the turn, so the next prompt can still close it cleanly."""
        session = self.sessions.get(session_id)
        if session is None:
            return  # a notification has no answer; an unknown id is only logged
        await session.client.send("pause")

    async def _command(
        self, session: AcpSession, name: str, argument: str
    ) -> schema.PromptResponse:
        text = await run_command(session, name, argument)
        await self._update(session.id, chunks.message_chunk(text))
        return schema.PromptResponse(stop_reason="end_turn")

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
            if session.terminals:  # the pod went away: its commands in the editor end too
                await editor_files.kill_all(self._asker.conn, session.id, session.terminals)
            # Nothing will say these are over any more: the editor's answers have nowhere to go.
            for asked in session.inputs.values():
                if asked.task is not None:
                    asked.task.cancel()
            session.inputs.clear()

    async def _on_event(self, session: AcpSession, event: PodEvent) -> None:
        data = event.data
        name = event.event
        # The answer's text and citations, and the API's web calls (see cli.acp.web).
        for update in web.answer_updates(session.cited, name, data):
            await self._update(session.id, update)
        if name in web.ANSWER_EVENTS:
            return
        if name == "thinking_delta":
            await self._update(session.id, chunks.thought_chunk(str(data["text"])))
        elif name == "tool_call_done":
            await self._tool_call(session, str(data["id"]), str(data["name"]), data["arguments"])
        elif name == "tool_output_delta":
            call_id = str(data["id"])
            session.output[call_id] = session.output.get(call_id, "") + str(data["text"])
            await self._update(session.id, mapping.tool_output(call_id, session.output[call_id]))
        elif name == "tool_result":
            await self._tool_result(session, data)
        elif name == "system_note":  # a preread sent as [File: …] shows as its Read call
            seq = data["seq"] if isinstance(data.get("seq"), int) else None
            preread = mapping.preread_updates(
                str(data["text"]), str(data["origin"]), seq, session.workspace
            )
            for update in preread:
                await self._update(session.id, update)
        elif name == "client_io_request":
            serving = asyncio.create_task(
                editor_files.serve_request(
                    self._asker.conn, session.client, session.id, data, session.terminals
                )
            )
            session.asking.add(serving)
            serving.add_done_callback(session.asking.discard)
        elif name == "error" and str(data.get("id") or "").startswith(editor_files.ANSWER_ID):
            log.info("the pod no longer waited for a file answer: %s", data["message"])
        elif name == "approval_request":
            # Asked aside: the other calls of the round keep streaming their updates meanwhile.
            asking = asyncio.create_task(self._asker.ask_permission(session, data))
            session.asking.add(asking)
            asking.add_done_callback(session.asking.discard)
        elif name == "approval_resolved" and data.get("decision") == "approved":
            await self._update(session.id, mapping.tool_running(str(data["id"])))
        elif name == "elicitation_request":
            self._asker.start_input(session, data)
        elif name == "elicitation_resolved":
            await self._asker.input_over(session, str(data["id"]), str(data["action"]))
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
            settle(session, "compacted", compaction_text(done))
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
                    session.id, chunks.thought_chunk(f"[pod {data['level']}] {data['message']}")
                )
        elif name == "todos":
            await self._update(session.id, plan_update(data["todos"]))
        elif name == "shutdown":
            settle(session, "cancelled", "")
        elif name == "status":
            await self._status(session, data)

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

    # -- helpers ---------------------------------------------------------------------------

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"message": f"unknown session {session_id!r}"})
        return session

    async def _update(self, session_id: str, update: Any) -> None:
        await self._asker.update(session_id, update)
