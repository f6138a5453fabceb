"""Whether a loaded pod may be unloaded to its session file now (a host's eviction)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from orchestrator.controller import Controller


def unload_blockers(controller: Controller) -> list[str]:
    """Why the pod must stay loaded now, in words; empty when it may be unloaded."""
    reasons: list[str] = []
    state = controller.state_id
    if state not in ("idle", "paused"):
        reasons.append(f"it is {state}")
    if controller.task.alive:
        reasons.append("a task runs")
    if controller.approvals.pending():
        reasons.append("an approval waits")
    if not controller.transcript.durable:
        reasons.append("records wait for the disk")
    if controller.jobs is not None and controller.jobs.running():
        reasons.append(f"{len(controller.jobs.running())} background job(s) run")
    if controller.notes:
        reasons.append("notes wait for the next turn")
    return reasons
