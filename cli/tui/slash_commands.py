"""Slash commands: run by the UI, never sent to the model.

A command acts as a key (``/cancel``), sends a method (``/compact``), or shows a view drawn in
the conversation (``/help``, ``/status``, ``/rewind``...). ``/rewind N`` shows what going back
would do and waits for Enter on an empty line; ``/attach NAME`` leaves for a child pod's UI.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from cli.commands.library import skills_text
from cli.commands.rewind import continue_fork, preview_text
from cli.prompt_lines import prompt_line
from cli.tui.budget_command import budget_command
from cli.tui.host import AppHost
from cli.tui.input import SlashLine, rewind_argument
from cli.tui.notices import Notice
from cli.tui.views import (
    children_text,
    custom_commands_text,
    help_text,
    jobs_listing,
    model_text,
    pick_child,
    sessions_text,
    status_text,
)
from orchestrator.protocol import CommandData, CommandsData, ErrorData, RewindData
from orchestrator.serving.client import ClientError

ATTACH_PREFIX = "attach:"
"""How the app says, as it exits, which child pod's socket the UI goes to next."""


class SlashCommands:
    """Runs the slash commands, and carries out a ``/rewind`` once it is confirmed."""

    def __init__(self, host: AppHost) -> None:
        self._host = host
        self._rewind_pending: tuple[int, str] | None = None
        """A previewed ``/rewind`` that Enter on an empty line carries out."""

    async def run(self, line: SlashLine) -> bool:
        """Run a slash command; False keeps the line in the editor (an unknown command)."""
        host = self._host
        command = line.command
        if command is None:
            host.say(
                Notice(
                    f"Unknown command /{line.name}: /help lists the commands "
                    f"(type //{line.name} to send it as a message)",
                    "error",
                )
            )
            return False
        if command.key is not None:
            await host.action_press(command.key)
        elif command.method is not None:
            params = {command.argument: line.argument} if command.argument and line.argument else {}
            if await host.send(command.method, params):
                host.say(Notice(f"/{command.name} sent"))
        elif command.view == "rewind":
            await self.rewind(line.argument)
        elif command.view == "fork":
            await self._fork(line.argument)
        elif command.view == "attach":
            self._attach(line.argument)
        elif command.view == "budget":
            await budget_command(host, line.argument)
        elif command.view == "todos":
            shown = host.toggle_todos()
            empty = " (the list is empty: it shows once the model writes one)"
            listed = "" if host.model.pod.todos else empty
            host.say(Notice(("Todo panel open" if shown else "Todo panel closed") + listed))
        elif command.view is not None:
            # A worker, so the message queue (keys, pod events) moves on while /sessions
            # reads the disk and /status asks the pod.
            host.run_worker(self._show_view(command.view), group="views")
        return True

    # -- /rewind -----------------------------------------------------------------------------

    async def rewind(self, argument: str) -> None:
        """``/rewind``: the prompts to go back to; ``/rewind N [MODE]``: a preview to confirm."""
        host = self._host
        if host.link is None:
            host.say(Notice("Not connected to a pod", "error"))
            return
        if not argument:
            history = await host.link.history()
            rows = [
                f"  {item['seq']:>5}  {' '.join(prompt_line(item).split())[:70]}"
                for item in history.items
                if item.get("kind") == "user_message"
            ]
            text = "Prompts to rewind to (/rewind N, or /rewind N code|conversation):\n"
            await host.draw([host.model.info(text + ("\n".join(rows) or "  (none yet)"))])
            host.conversation.follow()
            return
        parsed = rewind_argument(argument)
        if parsed is None:
            host.say(Notice("Use /rewind N, /rewind N code or /rewind N conversation", "error"))
            return
        to, mode = parsed
        reply = await host.link.request("rewind", {"to": to, "restore": mode, "dry_run": True})
        if isinstance(reply.payload, ErrorData):
            host.say(Notice(reply.payload.message, "error"))
            return
        preview = preview_text(reply.data, done=False)
        await host.draw([host.model.info(preview)])
        host.conversation.follow()
        self._rewind_pending = (to, mode)
        host.say(
            Notice(
                "Enter on an empty line rewinds; anything else keeps things as they are", ttl=None
            )
        )

    async def confirm_rewind(self, text: str) -> bool:
        """Enter after a ``/rewind`` preview: an empty line rewinds (True); other text drops
        the rewind and goes on as typed (False)."""
        if self._rewind_pending is None:
            return False
        (to, mode), self._rewind_pending = self._rewind_pending, None
        if not text.strip():
            await self._host.send("rewind", {"to": to, "restore": mode})
            return True
        self._host.say(Notice("Rewind dropped"))
        return False

    async def after_rewind(self, data: RewindData) -> None:
        """Draw the conversation as it now is; the rewound prompt goes back in the editor."""
        host = self._host
        if host.link is None:
            return
        try:
            status, history = await host.link.status(), await host.link.history()
        except (ClientError, TimeoutError) as exc:
            host.say(Notice(f"rewound, but the history did not come: {exc}", "error"))
            return
        await host.redraw(status, history)
        host.show_status()
        if data.restore != "code" and not host.editor.text.strip():
            host.editor.load_text(data.prompt)
            host.editor.move_cursor(host.editor.document.end)
        files = data.files
        changed = (
            f"; files: {len(files.restored)} restored, {len(files.deleted)} deleted"
            if files
            else ""
        )
        host.say(Notice(f"Rewound to before prompt {data.to}{changed}"))

    # -- the others --------------------------------------------------------------------------

    async def _fork(self, argument: str) -> None:
        host = self._host
        if host.link is None:
            host.say(Notice("Not connected to a pod", "error"))
            return
        reply = await host.link.request("fork", {"name": argument} if argument else {})
        if isinstance(reply.payload, ErrorData):
            host.say(Notice(reply.payload.message, "error"))
            return
        # This pod goes on running here on its own session: the fork needs a pod of its own.
        again = continue_fork(reply.data, beside=True)
        await host.draw(
            [host.model.info(f"Forked: session {reply.data['session']}. Continue it with: {again}")]
        )
        host.conversation.follow()

    async def _show_view(self, view: str) -> None:
        host = self._host
        pod = host.model.pod
        if view == "help":
            text = help_text() + custom_commands_text(await self.custom_commands())
        elif view in ("status", "jobs"):
            # Both ask the pod afresh: a job's state and size change without a status event.
            if host.link is not None and pod.connected:
                try:
                    pod.update(await host.link.status())
                except (ClientError, TimeoutError) as exc:
                    host.say(Notice(f"no status: {exc}", "error"))
                    return
            text = status_text(pod) if view == "status" else jobs_listing(pod.jobs)
        elif view == "children":
            text = children_text(list(pod.children.values()))
        elif view == "model":
            text = model_text(pod)
        elif view == "skills":
            # Read as a pod there would: the pod's own list is in its system prompt.
            text = (
                await asyncio.to_thread(skills_text, Path(pod.workspace))
                if pod.workspace
                else "No skills listed: the pod has not said where it works yet"
            )
        else:
            text = await asyncio.to_thread(sessions_text, pod.workspace)
        host.show_status()
        await host.draw([host.model.info(text)])
        host.conversation.follow()

    async def custom_commands(self) -> list[CommandData]:
        """The pod's custom commands, ``list_commands`` (none when it cannot say)."""
        link = self._host.link
        if link is None:
            return []
        try:
            reply = await link.request("list_commands", {})
        except (ClientError, TimeoutError):
            return []
        return reply.payload.commands if isinstance(reply.payload, CommandsData) else []

    def _attach(self, argument: str) -> None:
        """``/attach NAME``: leave this pod's UI for its child's; leaving that comes back."""
        children = list(self._host.model.pod.children.values())
        chosen = pick_child(children, argument.strip())
        if chosen is None:
            names = ", ".join(c.name for c in children) or "none runs now"
            self._host.say(Notice(f"Use /attach NAME with a child pod's name ({names})", "error"))
            return
        self._host.exit(f"{ATTACH_PREFIX}{chosen.socket}")
