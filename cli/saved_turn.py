"""A turn whose pod stopped under it (a crash, a killed host): saved in its session, it comes
back paused when a pod loads that session again. What the CLI says of it, and how it finds it."""

from __future__ import annotations

from pathlib import Path

__all__ = ["RESUME_HINT", "cut_off_hint", "cut_off_turn"]

RESUME_HINT = (
    "the turn is saved and comes back paused: `pod resume` starts the pod again and continues "
    "it; the next `pod run` replaces it"
)


def cut_off_turn(workspace: Path) -> str | None:
    """The name of the workspace's latest session when its last turn never ended (paused, or
    its pod died mid-turn: it comes back paused), with no pod holding it; else None."""
    from orchestrator.adapters.session import latest_session
    from orchestrator.adapters.session.catalog import summarize_session

    latest = latest_session(workspace, with_content=True)
    if latest is None:
        return None
    return latest.stem if summarize_session(latest).state == "turn open" else None


def cut_off_hint(session: str) -> str:
    """What to do about a turn whose pod stopped under it."""
    return (
        f"the last turn of session {session} did not end (its pod stopped under it, or it was "
        f"paused); {RESUME_HINT}"
    )
