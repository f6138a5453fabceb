"""Rewind, decided: which user message a rewind goes back to, which checkpoint restores the
workspace to just before it, and what the conversation then holds. Pure functions over the
history and the session's checkpoint records; the controller does the I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from orchestrator.core.history import Item, UserMessage
from orchestrator.core.segments import WorkflowInvokeSegment, flatten_segments
from orchestrator.errors import PodRuntimeError

__all__ = [
    "KINDS",
    "RESTORES",
    "Checkpoint",
    "RewindError",
    "RewindPlan",
    "RewindRestore",
    "checkpoint_before",
    "plan_rewind",
    "typed_line",
    "user_messages",
]

RewindRestore = Literal["both", "conversation", "code"]
"""What a rewind brings back: the conversation and the files, or one of them (the session's
rewind records store it too)."""


class Checkpoint(Protocol):
    """What a rewind reads of a workspace snapshot record (the session's ``CheckpointRecord``)."""

    @property
    def id(self) -> str:
        """The snapshot to restore."""
        ...

    @property
    def seq(self) -> int:
        """The item it was taken before."""
        ...

    @property
    def reason(self) -> str:
        """``turn`` (as a prompt's turn began) or ``round``."""
        ...


KINDS = {
    "assistant": "an assistant message",
    "tool_result": "a tool result",
    "system_message": "a system note",
    "compaction": "a compaction",
}
RESTORES: tuple[RewindRestore, ...] = ("both", "conversation", "code")


class RewindError(PodRuntimeError):
    """A rewind that cannot be done as asked; the message says why and what can be."""


@dataclass(frozen=True, slots=True)
class RewindPlan:
    """What a rewind to ``target`` does: the items it drops and the snapshot it restores."""

    target: UserMessage
    restore: RewindRestore
    dropped: int
    """Items of the conversation after (and including) the target that go."""
    checkpoint: Checkpoint | None
    """The workspace snapshot to go back to (None when only the conversation rewinds)."""

    @property
    def code(self) -> bool:
        """Whether the workspace files are restored."""
        return self.restore in ("both", "code")

    @property
    def conversation(self) -> bool:
        """Whether the conversation goes back."""
        return self.restore in ("both", "conversation")


def user_messages(items: Sequence[Item]) -> list[UserMessage]:
    """The prompts a rewind can go back to, oldest first."""
    return [item for item in items if isinstance(item, UserMessage)]


def checkpoint_before(checkpoints: Sequence[Checkpoint], seq: int) -> Checkpoint | None:
    """The snapshot taken as the turn of user message ``seq`` began (the workspace as it
    was when that prompt was sent), if one was taken."""
    for record in reversed(checkpoints):
        if record.seq == seq and record.reason == "turn":
            return record
    return None


def plan_rewind(
    items: Sequence[Item],
    checkpoints: Sequence[Checkpoint],
    to: int | None,
    restore: RewindRestore,
) -> RewindPlan:
    """Check a rewind before anything changes; ``to`` None means the last prompt.

    Raises :class:`RewindError` for a seq that is not one of the conversation's user
    messages, or a code restore with no snapshot from before that prompt.
    """
    prompts = user_messages(items)
    if not prompts:
        raise RewindError("there is nothing to rewind: the conversation has no prompt yet")
    if to is None:
        target = prompts[-1]
    else:
        found = next((p for p in prompts if p.seq == to), None)
        if found is None:
            shown = ", ".join(str(p.seq) for p in prompts[-5:])
            what = next((KINDS.get(item.kind, item.kind) for item in items if item.seq == to), None)
            why = (
                f"item {to} is {what}, not a user message"
                if what is not None
                else f"there is no item {to} in the conversation (rewound already?)"
            )
            raise RewindError(f"cannot rewind to {to}: {why}; recent prompts: {shown}")
        target = found
    checkpoint = checkpoint_before(checkpoints, target.seq)
    if restore in ("both", "code") and checkpoint is None:
        raise RewindError(
            f"cannot restore the files to before prompt {target.seq}: no checkpoint was taken "
            "then (checkpoints were off, or the session is older than them); "
            "rewind the conversation only"
        )
    dropped = sum(1 for item in items if item.seq >= target.seq)
    return RewindPlan(target=target, restore=restore, dropped=dropped, checkpoint=checkpoint)


def typed_line(prompt: UserMessage) -> str:
    """What a rewind offers back: the prompt as the person wrote it. A custom command's
    user message reads as its expansion, but its segments keep the line typed
    (``/review src/app.py``), and that is what is offered, not the expansion."""
    if prompt.segments and isinstance(prompt.segments[0], WorkflowInvokeSegment):
        return flatten_segments(prompt.segments)
    return prompt.text
