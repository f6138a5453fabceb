"""History surgery: pending calls, orphan closing, the interrupt note, pruning bounds."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.core.history import (
    INTERRUPT_NOTE,
    INTERRUPTED_SUMMARY,
    AssistantMessage,
    History,
    Item,
    SystemMessage,
    TextBlock,
    ToolResult,
    ToolUseBlock,
    user_message,
)
from orchestrator.core.repair import (
    CrashedCall,
    close_crashed_calls,
    close_orphans,
    interrupt_note,
    pending_tool_calls,
    prunable_tokens,
    prune_before_turn,
)
from orchestrator.core.segments import TextSegment
from orchestrator.core.validator import validate_wire
from orchestrator.core.wire import to_wire


def use(call_id: str) -> ToolUseBlock:
    """A tool call."""
    return ToolUseBlock(id=call_id, name="Bash", input={"cmd": call_id})


def asks(*ids: str) -> AssistantMessage:
    """An assistant message calling tools."""
    blocks: list[Any] = [TextBlock(text="working"), *(use(i) for i in ids)]
    return AssistantMessage(blocks=blocks)


def answer(call_id: str) -> ToolResult:
    """A real result."""
    return ToolResult(call_id=call_id, summary="done", content="out")


GO = user_message([TextSegment(text="go")])


def test_exact_strings() -> None:
    assert INTERRUPTED_SUMMARY == "[Interrupted by user]"
    assert INTERRUPT_NOTE == (
        "[The previous turn was interrupted by the user. The user's next request follows.]"
    )


def test_pending_are_unanswered_calls_of_the_last_assistant_message_in_order() -> None:
    items: list[Item] = [GO, asks("a", "b", "c"), answer("b")]
    assert pending_tool_calls(items) == [use("a"), use("c")]
    assert pending_tool_calls([*items, answer("a"), answer("c")]) == []


def test_only_the_last_assistant_message_counts() -> None:
    # An earlier orphan is not this function's business; the validator would flag it.
    items: list[Item] = [GO, asks("old"), GO, asks("new")]
    assert pending_tool_calls(items) == [use("new")]
    assert pending_tool_calls([GO, AssistantMessage(blocks=[TextBlock(text="x")])]) == []
    assert pending_tool_calls([]) == []
    assert pending_tool_calls([GO, SystemMessage(text="n")]) == []


def test_close_orphans_fields() -> None:
    items: list[Item] = [GO, asks("a", "b"), answer("a")]
    assert close_orphans(items) == [
        ToolResult(
            kind="tool_result",
            seq=0,
            turn=0,
            call_id="b",
            summary="[Interrupted by user]",
            content=None,
            is_error=False,
            synthetic=True,
        )
    ]


def test_close_orphans_is_idempotent_and_makes_the_history_wire_valid() -> None:
    history = History()
    history.new_turn()
    history.extend([GO, asks("a", "b", "c"), answer("b")])
    first = close_orphans(history.items)
    assert [r.call_id for r in first] == ["a", "c"]
    history.extend(list(first))
    assert close_orphans(history.items) == []
    history.append(interrupt_note())
    history.append(user_message([TextSegment(text="next")]))
    assert validate_wire(to_wire(history.items)) == []


def test_close_orphans_after_a_note_still_answers_the_calls() -> None:
    items: list[Item] = [GO, asks("a"), SystemMessage(text="note")]
    assert [r.call_id for r in close_orphans(items)] == ["a"]


def test_interrupt_note() -> None:
    assert interrupt_note() == SystemMessage(
        kind="system_message", seq=0, turn=0, text=INTERRUPT_NOTE, origin="interrupt"
    )


@pytest.mark.parametrize(
    ("current", "keep", "bound"),
    [(5, None, 0), (5, 0, 0), (5, -1, 0), (5, 1, 5), (5, 2, 4), (5, 5, 1), (5, 9, 0), (0, 3, 0)],
)
def test_prune_before_turn(current: int, keep: int | None, bound: int) -> None:
    assert prune_before_turn(current, keep) == bound


def test_prunable_tokens_counts_content_of_older_turns() -> None:
    items: list[Item] = [
        ToolResult(turn=1, call_id="a", summary="s", content="x" * 40),
        ToolResult(turn=1, call_id="b", summary="s", content=None),
        ToolResult(turn=2, call_id="c", summary="s", content="y" * 400),
        GO,
    ]
    assert prunable_tokens(items, before_turn=2) == 10
    assert prunable_tokens(items, before_turn=3) == 110
    assert prunable_tokens(items, before_turn=0) == 0


def test_crashed_calls_get_a_truthful_result_and_unstarted_ones_stay_pending() -> None:
    history = History()
    history.new_turn()
    history.extend([user_message([TextSegment(text="go")]), asks("started", "never")])
    crashed = {
        "started": CrashedCall(
            call_id="started", name="Bash", ran_for_s=12.34, output="step 1\n", output_bytes=9
        ),
        "gone": CrashedCall(call_id="gone", name="Bash", ran_for_s=1.0),  # already answered
    }
    [result] = close_crashed_calls(history.items, crashed, max_bytes=1000)
    assert result.call_id == "started" and result.is_error and result.synthetic
    assert result.summary == (
        "[Interrupted by a pod crash] Bash was still running when the pod stopped (it had run "
        "for at least 12.3 s); it may have run partly or completely. It was not run again: "
        "check its effects before repeating it."
    )
    assert result.content == (
        "Output captured before the crash:\nstep 1\n"
        "\n[2 more bytes of output were captured but are not shown]"
    )
    history.append(result)
    assert [c.id for c in pending_tool_calls(history.items)] == ["never"]
    assert close_crashed_calls(history.items, crashed, max_bytes=1000) == []  # idempotent


def test_a_crashed_call_without_output_says_so_and_is_capped() -> None:
    history = History()
    history.new_turn()
    history.extend([user_message([TextSegment(text="go")]), asks("a")])
    quiet = {"a": CrashedCall(call_id="a", name="Bash", ran_for_s=0.5)}
    [result] = close_crashed_calls(history.items, quiet, max_bytes=1000)
    assert result.content == "No output was captured before the crash."
    # The last sign of life came as it started: no figure, rather than a false "0.0 s".
    unknown = {"a": CrashedCall(call_id="a", name="Bash", ran_for_s=0.0)}
    [early] = close_crashed_calls(history.items, unknown, max_bytes=1000)
    assert "(how long it ran is not known)" in early.summary and "0.0 s" not in early.summary
    loud = {"a": CrashedCall(call_id="a", name="Bash", ran_for_s=0.5, output="x" * 5000)}
    [capped] = close_crashed_calls(history.items, loud, max_bytes=100)
    assert capped.content is not None and len(capped.content.encode()) < 200
    assert "truncated" in capped.content


def _media_result(turn: int, *, images: int = 0, pages: int = 0) -> ToolResult:
    from orchestrator.core.documents import DocumentData
    from orchestrator.core.images import ImageData

    return ToolResult(
        turn=turn,
        call_id=f"toolu_{turn}_{images}_{pages}",
        summary="read",
        content="x",
        images=[ImageData(media_type="image/png", data="AAAA") for _ in range(images)],
        documents=[DocumentData(data="JVBERi0=", pages=pages)] if pages else [],
    )


def test_media_within_limits_moves_no_bound() -> None:
    from orchestrator.core.repair import media_bound, unpruned_media

    items: list[Any] = [_media_result(1, images=60, pages=40), _media_result(2, pages=60)]
    assert unpruned_media(items, 0) == (60, 100)
    assert media_bound(items, 0, current_turn=2) is None


def test_media_past_a_requests_limits_prunes_the_oldest_turns_that_make_room() -> None:
    from orchestrator.core.repair import media_bound, unpruned_media

    items: list[Any] = [
        _media_result(1, pages=60),
        _media_result(2, images=70),
        _media_result(3, images=40, pages=60),
    ]
    # 120 pages and 110 images: dropping turn 1 is not enough (110 images), turn 2 too is.
    assert media_bound(items, 0, current_turn=3) == 3
    assert unpruned_media(items, 3) == (40, 60)
    assert media_bound(items, 1, current_turn=3) == 3
    # Only the current turn's own results over the limit: nothing earlier makes room.
    alone: list[Any] = [_media_result(4, pages=70), _media_result(4, pages=70)]
    assert media_bound(alone, 0, current_turn=4) is None
