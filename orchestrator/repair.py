"""History surgery as pure functions over item lists.

The lifecycle machine's actions call these; each returns the items to append (history is
append-only), is deterministic, and is idempotent: applying its output and calling it again
yields nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.history import (
    INTERRUPT_NOTE,
    INTERRUPTED_SUMMARY,
    AssistantMessage,
    Item,
    SystemMessage,
    ToolResult,
    ToolUseBlock,
)
from orchestrator.tool_output import cap_content
from orchestrator.tools.base import ToolOutput


def pending_tool_calls(items: list[Item]) -> list[ToolUseBlock]:
    """Tool calls of the last assistant message that have no result yet, in call order."""
    answered: set[str] = set()
    for item in reversed(items):
        if isinstance(item, ToolResult):
            answered.add(item.call_id)
        elif isinstance(item, AssistantMessage):
            return [call for call in item.tool_uses if call.id not in answered]
    return []


def close_orphans(items: list[Item]) -> list[ToolResult]:
    """One synthetic ``[Interrupted by user]`` result (no content) per unanswered tool call."""
    return [
        ToolResult(call_id=call.id, summary=INTERRUPTED_SUMMARY, content=None, synthetic=True)
        for call in pending_tool_calls(items)
    ]


def interrupt_note() -> SystemMessage:
    """The note that tells the model the previous turn was cut short by the user."""
    return SystemMessage(text=INTERRUPT_NOTE, origin="interrupt")


def prune_before_turn(current_turn: int, keep_turns: int | None) -> int:
    """Tool results of turns below this number send their summary only (0: prune nothing).

    ``keep_turns`` is how many of the most recent turns keep their tool content; None or a
    value below 1 turns pruning off.
    """
    if keep_turns is None or keep_turns < 1:
        return 0
    return max(0, current_turn - keep_turns + 1)


def prunable_tokens(items: list[Item], before_turn: int) -> int:
    """Estimated tokens that pruning at ``before_turn`` removes (``len(content) / 4``)."""
    return sum(
        len(item.content) // 4
        for item in items
        if isinstance(item, ToolResult) and item.content is not None and item.turn < before_turn
    )


CRASH_SUMMARY = "[Interrupted by a pod crash]"


@dataclass(frozen=True, slots=True)
class CrashedCall:
    """What is known of a call that was running when the pod died."""

    call_id: str
    name: str
    ran_for_s: float
    """From its start to the pod's last sign of life (the session or its output file)."""
    output: str | None = None
    """Output captured before the crash (a prefix of it), if any was."""
    output_bytes: int = 0
    """How much output there was in all."""


def close_crashed_calls(
    items: list[Item], crashed: dict[str, CrashedCall], *, max_bytes: int
) -> list[ToolResult]:
    """A truthful result for each unanswered call that had started when the pod died.

    Only calls with a write-ahead record are in ``crashed``; the others never started and stay
    pending, so Resume runs them. A crashed call is never run again: it may have done its work.
    """
    results: list[ToolResult] = []
    for call in pending_tool_calls(items):
        info = crashed.get(call.id)
        if info is None:
            continue
        summary = (
            f"{CRASH_SUMMARY} {call.name} was still running when the pod stopped, "
            f"{info.ran_for_s:.1f} s after it started; it may have run partly or completely. "
            "It was not run again: check its effects before repeating it."
        )
        if info.output:
            dropped = info.output_bytes - len(info.output.encode("utf-8"))
            content = f"Output captured before the crash:\n{info.output}"
            if dropped > 0:
                content += f"\n[{dropped} more bytes of output were captured but are not shown]"
        else:
            content = "No output was captured before the crash."
        output = cap_content(ToolOutput(summary=summary, content=content, is_error=True), max_bytes)
        results.append(
            ToolResult(
                call_id=call.id,
                summary=output.summary,
                content=output.content,
                is_error=True,
                synthetic=True,
            )
        )
    return results
