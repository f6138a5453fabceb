"""``/budget`` in the TUI: the budgets and the spend, or a change of one cap.

``/budget`` shows them as ``pod budget show`` does; ``/budget turn 5`` and ``/budget session
none`` send ``set_budget`` (docs/budgets.md). A turn a budget paused then goes on with Enter
on an empty line, as any paused turn does.
"""

from __future__ import annotations

from cli.commands.budget import budget_text
from cli.terminal_text import visible
from cli.tui.host import AppHost
from cli.tui.notices import Notice
from orchestrator.protocol import StatusData
from orchestrator.serving.client import ClientError

__all__ = ["USAGE", "budget_change", "budget_command"]

USAGE = "Use /budget, /budget turn AMOUNT or /budget session AMOUNT (none: no cap)"

_CAPS = {"turn": "turn_budget_usd", "session": "budget_usd"}


def budget_change(argument: str) -> dict[str, float | None] | None:
    """``set_budget``'s params from ``turn 5`` / ``session none``; None when it is no change."""
    parts = argument.split()
    if len(parts) != 2 or parts[0] not in _CAPS:
        return None
    key, amount = _CAPS[parts[0]], parts[1].removeprefix("$")
    if amount.lower() == "none":
        return {key: None}
    try:
        value = float(amount)
    except ValueError:
        return None
    # The pod refuses these too; said here in the command's own words.
    return {key: value} if 0 <= value < float("inf") else None


async def budget_command(host: AppHost, argument: str) -> None:
    """Show the budgets, or change the cap the argument names."""
    pod = host.model.pod
    if host.link is None or not pod.connected:
        host.say(Notice("Not connected to a pod", "error"))
        return
    change = budget_change(argument) if argument else {}
    if change is None:
        host.say(Notice(USAGE, "error"))
        return
    try:
        if change:
            reply = await host.link.request("set_budget", change)
            if not isinstance(reply.payload, StatusData):
                message = str(reply.data.get("message", "refused"))
                host.say(Notice(visible(f"pod: {message}"), "error"))
                return
            status = reply.payload
        else:
            status = await host.link.status()
    except (ClientError, TimeoutError) as exc:
        host.say(Notice(f"pod: {exc}", "error"))
        return
    pod.update(status)
    host.show_status()
    budget = status.budget.model_dump() if status.budget is not None else None
    line = budget_text(budget, status.pause_reason)
    if status.pause_reason == "budget":
        line += "; Enter on an empty line resumes"
    host.say(Notice(f"Budget: {line}", ttl=None))
