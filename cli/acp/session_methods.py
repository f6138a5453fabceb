"""The ACP methods around a session's life beside prompting: ``session/list``,
``session/resume``, ``session/close``, ``session/set_config_option`` and ``authenticate``.

:class:`SessionMethods` is a part of :class:`~cli.acp.agent.PodAgent` (which inherits it):
it uses the agent's sessions and its way of opening one (``_open``).

- ``session/list`` lists the sessions stored for a folder (``cwd``, else the folder
  ``pod acp`` runs in), newest first, as ``pod sessions ls`` finds them, 50 to a page.
- ``session/resume`` opens a stored session in a pod like ``session/load`` but replays
  nothing; a session this agent has open already is answered as it is.
- ``session/close`` pauses a running prompt (it answers ``cancelled``), shuts the pod this
  agent started for the session (the session file stays; ``session/load`` reopens it), and
  forgets the session; a pod it only attached to keeps running.
- ``session/set_config_option`` is the pod's ``set_model`` (:mod:`cli.acp.options`).
- ``authenticate``: the one method offered, ``anthropic-api-key``, is the environment variable
  ``ANTHROPIC_API_KEY`` given to ``pod acp`` (the editor sets it where it starts the agent);
  without it the pod answers from the offline demo, so no session ever requires it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acp import RequestError, schema

from cli.acp import modes, options
from cli.acp.session import AcpSession, settle
from orchestrator.serving.client import ClientError, PodClient

__all__ = [
    "API_KEY_METHOD",
    "PAGE",
    "SessionMethods",
    "auth_methods",
    "pod_models",
    "shown_options",
]

log = logging.getLogger(__name__)

API_KEY_METHOD = "anthropic-api-key"
"""The id of the one authentication method offered."""

PAGE = 50
"""Sessions per ``session/list`` page."""


def auth_methods() -> list[
    schema.EnvVarAuthMethod | schema.TerminalAuthMethod | schema.AuthMethodAgent
]:
    """What ``initialize`` offers: the API key as an environment variable."""
    return [
        schema.EnvVarAuthMethod(
            type="env_var",
            id=API_KEY_METHOD,
            name="Anthropic API key",
            description=(
                "Set ANTHROPIC_API_KEY in the environment the editor starts `pod acp` with; "
                "without it the pod answers from its offline demo."
            ),
            vars=[schema.AuthEnvVar(name="ANTHROPIC_API_KEY", label="API key", secret=True)],
            link="https://console.anthropic.com/settings/keys",
        )
    ]


class SessionMethods:
    """Session methods of the agent (mixed into :class:`~cli.acp.agent.PodAgent`)."""

    sessions: dict[str, AcpSession]

    async def _open(
        self, workspace: Path, *, session: Path | None, mcp: dict[str, Any]
    ) -> AcpSession:
        raise NotImplementedError  # the agent's

    def _session(self, session_id: str) -> AcpSession:
        raise NotImplementedError  # the agent's

    async def _update(self, session_id: str, update: Any) -> None:
        raise NotImplementedError  # the agent's

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> schema.ListSessionsResponse:
        """``session/list``: a folder's stored sessions, newest first."""
        from orchestrator.adapters.session import list_sessions

        folder = Path(cwd) if cwd else Path.cwd()
        if not folder.is_absolute():
            raise RequestError.invalid_params({"message": f"cwd must be absolute: {cwd!r}"})
        start = 0
        if cursor:
            if not cursor.isdigit():
                raise RequestError.invalid_params({"message": f"not a cursor: {cursor!r}"})
            start = int(cursor)
        # Each file is read to be summarized: off the loop, which serves the editor.
        found = await asyncio.to_thread(list_sessions, folder)
        found.sort(key=lambda s: s.modified_ms, reverse=True)
        page = found[start : start + PAGE]
        rows = [
            schema.SessionInfo(
                session_id=summary.name,
                cwd=str(folder),
                title=summary.title or None,
                updated_at=datetime.fromtimestamp(summary.modified_ms / 1000, UTC).isoformat(),
            )
            for summary in page
        ]
        more = start + PAGE < len(found)
        return schema.ListSessionsResponse(
            sessions=rows, next_cursor=str(start + PAGE) if more else None
        )

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> schema.ResumeSessionResponse:
        """``session/resume``: a stored session in a pod, nothing replayed."""
        from cli.acp import mapping
        from orchestrator.adapters.session import SessionError, resolve_session

        opened = self.sessions.get(session_id)
        if opened is None:
            workspace = Path(cwd)
            try:
                path = resolve_session(workspace, session_id)
            except SessionError as exc:
                raise RequestError.resource_not_found(session_id) from exc
            opened = await self._open(
                workspace, session=path, mcp=mapping.mcp_servers_config(mcp_servers or [])
            )
        return schema.ResumeSessionResponse(
            modes=modes.mode_state(opened.mode), config_options=shown_options(opened)
        )

    async def close_session(self, session_id: str, **kwargs: Any) -> schema.CloseSessionResponse:
        """``session/close``: stop its work, end the pod started for it, forget it."""
        session = self._session(session_id)
        del self.sessions[session_id]
        running = session.prompt is not None and not session.prompt.done()
        with contextlib.suppress(ClientError):
            if running:
                await session.client.send("pause")  # as session/cancel: resumable later
            if session.pod is not None:
                await session.client.send("shutdown")
        settle(session, "cancelled", "")
        if session.pod is not None:
            await session.pod.stop()
        if session.pump is not None:
            session.pump.cancel()
        await session.client.close()
        return schema.CloseSessionResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> schema.SetSessionConfigOptionResponse:
        """``session/set_config_option``: the pod's ``set_model``, refused as it refuses."""
        session = self._session(session_id)
        try:
            params = options.set_model_params(config_id, value)
        except options.OptionRefused as exc:
            raise RequestError.invalid_params({"message": str(exc)}) from exc
        reply = await session.client.request("set_model", params, timeout=60)
        if reply.event == "error":
            raise RequestError.invalid_params({"message": str(reply.data.get("message"))})
        settings = options.settings_of(reply.data)
        if settings is not None:
            session.settings = settings
        return schema.SetSessionConfigOptionResponse(config_options=shown_options(session) or [])

    async def authenticate(self, method_id: str, **kwargs: Any) -> schema.AuthenticateResponse:
        """``authenticate``: done when the key is in ``pod acp``'s environment."""
        if method_id != API_KEY_METHOD:
            raise RequestError.invalid_params(
                {"message": f"unknown method {method_id!r}; offered: {API_KEY_METHOD}"}
            )
        if not os.environ.get("ANTHROPIC_API_KEY"):
            raise RequestError.auth_required(
                {
                    "message": "ANTHROPIC_API_KEY is not set in the environment `pod acp` "
                    "runs in: set it where the editor starts the agent (its env settings)"
                }
            )
        return schema.AuthenticateResponse()

    async def _status(self, session: AcpSession, data: dict[str, Any]) -> None:
        """Tell the editor of a mode, model, thinking or effort changed anywhere."""
        if data.get("permission_mode", session.mode) != session.mode:
            session.mode = str(data["permission_mode"])
            await self._update(session.id, modes.mode_update(session.mode))
        settings = options.settings_of(data)
        if settings is not None and settings != session.settings:
            session.settings = settings
            await self._update(session.id, options.option_update(settings, session.models))


def shown_options(
    session: AcpSession,
) -> list[schema.SessionConfigOptionSelect | schema.SessionConfigOptionBoolean] | None:
    """The session's config options as the editor is to see them (None: the pod does not
    say its settings)."""
    if session.settings is None:
        return None
    return options.config_options(session.settings, session.models)


async def pod_models(client: PodClient) -> list[tuple[str, str]]:
    """The models the pod's provider lists (none when the pod cannot say: the ``model``
    option then offers the current one)."""
    try:
        listed = await client.models()
    except ClientError as exc:
        log.warning("the pod did not list its models: %s", exc)
        return []
    return [(model.id, model.name) for model in listed.models]
