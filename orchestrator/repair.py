"""History surgery as pure functions over item lists.

The lifecycle machine's actions call these; each returns the items to append (history is
append-only), is deterministic, and is idempotent: applying its output and calling it again
yields nothing more.
"""

from __future__ import annotations

from orchestrator.history import (
    INTERRUPT_NOTE,
    INTERRUPTED_SUMMARY,
    AssistantMessage,
    Item,
    SystemMessage,
    ToolResult,
    ToolUseBlock,
)


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
