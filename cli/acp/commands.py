"""An editor's slash commands, run against the session's pod, and the request ids the agent
gives its requests so that the pod's answer (or refusal) finds what it was for.

``/cancel`` cancels for good (``session/cancel`` only pauses), ``/status`` says where the
pod is, ``/rewind [N [MODE]]`` lists the prompts or rewinds, ``/fork [NAME]`` forks the
session, ``/compact [FOCUS]`` compacts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from cli.acp import mapping
from cli.acp.session import AcpSession
from cli.prompt_lines import prompt_line
from orchestrator.runtime.status import status_text
from orchestrator.serving.client import ClientError

__all__ = ["CANCEL_ID", "REWIND_ID", "RUN_ID", "offer_commands", "run_command"]

RUN_ID = "acp-run"
"""The request id of a prompt's ``run``, to tell its refusal from other errors."""
CANCEL_ID = "acp-cancel"
"""The request id of ``/cancel``'s ``cancel``, to tell its refusal apart."""
REWIND_ID = "acp-rewind"
"""The request id of ``/rewind N``'s ``rewind``, to tell its refusal apart."""


async def offer_commands(
    session: AcpSession,
    offered: dict[str, list[str]],
    update: Callable[[str, Any], Awaitable[None]],
    *,
    always: bool = False,
) -> None:
    """Send ``available_commands_update`` with the pod's custom commands when they changed
    since ``offered`` (by session; ``always`` when the session opens): a command file or an
    MCP server's prompt list may change between prompts."""
    try:
        pod_commands = (await session.client.commands()).commands
    except (ClientError, TimeoutError):
        pod_commands = []  # a pod without custom commands (or an older one)
    key = [f"{c.name}\0{c.description}\0{c.argument_hint}\0{c.shadowed_by}" for c in pod_commands]
    if always or key != offered.get(session.id):
        offered[session.id] = key
        await update(session.id, mapping.available_commands(pod_commands))


async def run_command(session: AcpSession, name: str, argument: str) -> str:
    """Run one slash command (``cancel``, ``status``, ``rewind``, ``fork``, ``compact``)
    and say what came of it, as the text the editor shows."""
    client = session.client
    if name == "cancel":
        text = await _cancel(session)
    elif name == "status":
        text = status_text((await client.status()).model_dump(exclude={"id"}))
    elif name == "rewind":
        text = await _rewind(session, argument)
    elif name == "fork":
        reply = await client.request("fork", {"name": argument} if argument else {})
        text = (
            f"Not forked: {reply.data['message']}"
            if reply.event == "error"
            else f"Forked: session {reply.data['session']} ({reply.data['path']})"
        )
    else:
        text = await _compact(session, argument)
    return text


async def _cancel(session: AcpSession) -> str:
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
        return "Nothing is running to cancel: the turn is paused, and your next prompt closes it."
    return f"Nothing to cancel ({refusal})."


async def _rewind(session: AcpSession, argument: str) -> str:
    """``/rewind``: the prompts to go back to; ``/rewind N [MODE]``: do it (an editor's
    command is its own confirmation) and say what changed."""
    client = session.client
    if not argument:
        items = (await client.history()).items
        rows = [
            f"{item['seq']}: {' '.join(prompt_line(item).split())[:70]}"
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


async def _compact(session: AcpSession, focus: str) -> str:
    """``/compact [FOCUS]``: compact, and the pod's word on it."""
    waiter: asyncio.Future[tuple[str, str]] = asyncio.get_running_loop().create_future()
    session.prompt = waiter  # the pump resolves it on the compaction or its alert
    await session.client.send("compact", {"focus": focus} if focus else {}, id=RUN_ID)
    kind, message = await waiter
    return message if kind == "compacted" else f"Not compacted: {message}"
