"""Shift-Tab in the prompt editor: switch the pod to the next permission mode.

The modes come in :data:`~cli.tui.keys.MODE_CYCLE`'s order; one the pod refuses (wider than
it was started with) is skipped, so a pod started in ``default`` cycles ``default`` →
``plan`` → ``default``. The pod's reply (its ``status``) redraws the status line.
"""

from __future__ import annotations

from cli.tui.host import AppHost
from cli.tui.keys import next_modes
from cli.tui.notices import Notice
from orchestrator.protocol import StatusData
from orchestrator.serving.client import ClientError

__all__ = ["cycle_mode"]


async def cycle_mode(host: AppHost) -> None:
    """Ask the pod for the next mode it takes, and say which it is now."""
    pod = host.model.pod
    if host.link is None or not pod.connected:
        host.say(Notice("Not connected to a pod", "error"))
        return
    refused = ""
    for mode in next_modes(pod.permission_mode):
        try:
            reply = await host.link.request("set_mode", {"mode": mode})
        except (ClientError, TimeoutError) as exc:
            host.say(Notice(f"pod: {exc}", "error"))
            return
        if isinstance(reply.payload, StatusData):
            pod.update(reply.payload)
            host.show_status()
            host.say(Notice(f"Permission mode: {pod.permission_mode} (Shift-Tab for the next)"))
            return
        refused = str(reply.data.get("message", ""))
    host.say(Notice(f"No other mode: {refused}", "warn"))
