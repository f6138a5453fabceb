"""The notice line's state: what it says, and for how long it stays true."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

NoticeLevel: TypeAlias = Literal["info", "warn", "error"]

NOTICE_TTL_S = 6.0
"""How long an answer to a key stays on the notice line when nothing replaces it sooner."""


@dataclass(frozen=True)
class Notice:
    """One line above the editor, true for a while: ``ttl`` seconds, or while the status holds.

    A notice about the pod's state (``Nothing to cancel: the pod is idle``) stops being true
    when the state changes; one about a key window (``press Ctrl-C again``) when the window
    closes. ``ttl=None`` keeps it until the status changes.
    """

    text: str
    level: NoticeLevel = "info"
    ttl: float | None = NOTICE_TTL_S
    while_status: bool = True


@dataclass
class NoticeBoard:
    """The notice on screen, with when and in which status it was shown."""

    notice: Notice | None = None
    shown_at: float = 0.0
    shown_in: str = ""

    def show(self, notice: Notice | None, *, status: str, now: float) -> None:
        """Replace the notice (None clears it)."""
        self.notice, self.shown_at, self.shown_in = notice, now, status

    def current(self, *, status: str, now: float) -> Notice | None:
        """The notice still true at ``now`` in ``status``; a stale one is dropped."""
        notice = self.notice
        if notice is None:
            return None
        expired = notice.ttl is not None and now >= self.shown_at + notice.ttl
        if expired or (notice.while_status and status != self.shown_in):
            self.notice = None
        return self.notice

    def expires(self) -> float | None:
        """When the current notice runs out, if it has a time limit."""
        if self.notice is None or self.notice.ttl is None:
            return None
        return self.shown_at + self.notice.ttl
