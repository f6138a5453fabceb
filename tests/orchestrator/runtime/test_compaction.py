"""Compaction planning as pure functions: where to cut, which files to re-read, the request."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.config.model import PodConfig
from orchestrator.core.history import (
    AssistantMessage,
    AttachedFile,
    Compaction,
    History,
    Item,
    TextBlock,
    ToolResult,
    ToolUseBlock,
    UserMessage,
)
from orchestrator.core.repair import close_orphans
from orchestrator.core.segments import FileRefSegment, TextSegment
from orchestrator.core.validator import validate_wire
from orchestrator.core.wire import to_wire
from orchestrator.runtime.compaction import (
    COMPACTION_PROMPT,
    CompactionPlan,
    files_to_reattach,
    plan_compaction,
    reduced_messages,
    summary_request_messages,
)
from orchestrator.runtime.context import Context


def conversation(turns: int, *, pending: bool = False) -> History:
    history = History()
    for t in range(turns):
        history.new_turn()
        history.append(UserMessage(segments=[TextSegment(text=f"t{t}")], text=f"t{t}"))
        call = ToolUseBlock(id=f"toolu_{t + 1}", name="read_file", input={"path": f"f{t}.py"})
        history.append(AssistantMessage(blocks=[TextBlock(text="reading"), call]))
        if pending and t == turns - 1:
            break
        history.append(ToolResult(call_id=call.id, summary="read", content="x" * 400))
        history.append(AssistantMessage(blocks=[TextBlock(text=f"done {t}")]))
    return history


def one(item: Item) -> int:
    return 1


def test_the_cut_keeps_the_longest_tail_that_fits_at_a_message_start() -> None:
    items = conversation(5).items
    plan = plan_compaction(items, keep_tokens=7, tokens=one)
    assert plan is not None
    assert isinstance(plan.kept[0], UserMessage | AssistantMessage)
    assert len(plan.kept) <= 7 and plan.summarised + plan.kept == items
    # Summary (as a user message) + kept part + the next user message is wire-valid.
    head = UserMessage(text="[summary]")
    assert validate_wire(to_wire([head, *plan.kept, UserMessage(text="next")])) == []


def test_at_least_the_last_message_is_kept_and_short_bodies_need_nothing() -> None:
    items = conversation(3).items
    plan = plan_compaction(items, keep_tokens=0, tokens=one)
    assert plan is not None and plan.kept == items[-1:]
    assert plan_compaction(items[:1], keep_tokens=100, tokens=one) is None


def test_unanswered_calls_of_a_paused_turn_stay_with_their_message() -> None:
    items = conversation(3, pending=True).items
    plan = plan_compaction(items, keep_tokens=0, tokens=one)
    assert plan is not None
    assert isinstance(plan.kept[0], AssistantMessage) and plan.kept[0].tool_uses
    rest = [UserMessage(text="[summary]"), *plan.kept, *close_orphans(plan.kept)]
    assert validate_wire(to_wire([*rest, UserMessage(text="go on")])) == []


def test_files_user_refs_first_then_earlier_then_tools_never_what_is_kept() -> None:
    ref = UserMessage(segments=[FileRefSegment(path="spec.md")], text="@spec.md")
    items = [ref, *conversation(3).items]
    plan = CompactionPlan(summarised=items[:-4], kept=items[-4:])
    assert files_to_reattach(plan, limit=5, earlier=["old.md", "f0.py"]) == [
        "spec.md",
        "old.md",
        "f0.py",
        "f1.py",
    ]  # f2.py is read in the kept part
    assert files_to_reattach(plan, limit=2) == ["spec.md", "f1.py"]


def test_the_summary_request_appends_the_instruction_without_mutating() -> None:
    messages = to_wire(conversation(2).items)
    snapshot = repr(messages)
    ending_in_assistant = summary_request_messages(messages, focus="the bug")
    assert repr(messages) == snapshot
    assert ending_in_assistant[-1]["role"] == "user"
    text = ending_in_assistant[-1]["content"][-1]["text"]
    assert text.startswith(COMPACTION_PROMPT) and text.endswith("Focus especially on: the bug")
    ending_in_user = summary_request_messages(to_wire(conversation(1).items[:3]), focus=None)
    assert [b["type"] for b in ending_in_user[-1]["content"]] == ["tool_result", "text"]
    assert validate_wire(ending_in_user) == []


def test_a_reduced_request_fits_and_stays_valid() -> None:
    items = conversation(40).items
    messages = reduced_messages(items, budget=400)
    assert validate_wire([*messages, {"role": "user", "content": "next"}]) == []
    assert messages[0]["role"] == "user"
    assert all(
        "x" * 400 not in str(b.get("content")) for m in messages for b in m["content"]
    )  # tool contents pruned to their summaries


def test_the_view_starts_at_the_latest_compaction(tmp_path: Path) -> None:
    history = conversation(4)
    last_summarised = history.items[3].seq
    history.append(
        Compaction(
            summary="earlier work",
            first_seq=1,
            last_seq=last_summarised,
            tokens_before=1000,
            tokens_after=200,
            files=[AttachedFile(path="a.py", text="[File: a.py]\nA")],
        )
    )
    context = Context(config=PodConfig(workspace=tmp_path), history=history)
    view = context.view()
    assert view[0].text.startswith("[Conversation summary")  # type: ignore[union-attr]
    assert "[File: a.py]\nA" in view[0].text  # type: ignore[union-attr]
    assert [i.seq for i in view[1:]] == [i.seq for i in history.items[4:-1]]
    assert validate_wire([*context.messages(), {"role": "user", "content": "next"}]) == []
    assert context.body() == view[1:]


def test_pruning_waits_for_a_step(tmp_path: Path) -> None:
    history = conversation(6)
    config = PodConfig(workspace=tmp_path, prune_keep_turns=1, prune_step_tokens=300)
    context = Context(config=config, history=history)
    move = context.prune_move()
    assert move is not None and move[0] == 6 and move[1] >= 300
    small = Context(config=config.model_copy(update={"prune_step_tokens": 10**6}), history=history)
    assert small.prune_move() is None  # not worth rewriting the cached prefix yet


def test_a_reduced_request_wires_only_the_tail_that_can_fit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 29: a long history is not wired whole to keep only its last few messages."""
    import orchestrator.runtime.compaction as compaction

    items = conversation(400).items
    calls: list[int] = []
    real = compaction.to_wire

    def counting(batch: list[Item], **kwargs: int) -> list[dict[str, object]]:
        calls.append(len(batch))
        return real(batch, **kwargs)

    monkeypatch.setattr(compaction, "to_wire", counting)
    messages = reduced_messages(items, budget=400)
    assert calls and calls[0] <= 400 // 4 + 1 < len(items)
    assert validate_wire([*messages, {"role": "user", "content": "next"}]) == []


def test_pdf_pages_past_a_requests_limit_prune_at_once_whatever_the_step(
    tmp_path: Path,
) -> None:
    from orchestrator.core.documents import DocumentData

    history = History()
    for t in range(3):
        history.new_turn()
        history.append(UserMessage(segments=[TextSegment(text=f"t{t}")], text=f"t{t}"))
        call = ToolUseBlock(id=f"toolu_{t + 1}", name="mcp__d__read", input={})
        history.append(AssistantMessage(blocks=[call]))
        document = DocumentData(data="JVBERi0=", pages=45)
        history.append(
            ToolResult(call_id=call.id, summary="pdf", content="p", documents=[document])
        )
        history.append(AssistantMessage(blocks=[TextBlock(text=f"done {t}")]))
    # No step is due (prune nothing by turns, and a huge step), but 135 pages would make the
    # API refuse every request: the oldest turn is pruned now.
    config = PodConfig(workspace=tmp_path, prune_keep_turns=None, prune_step_tokens=10**9)
    context = Context(config=config, history=history)
    move = context.prune_move()
    assert move is not None and move[0] == 2
    context.apply_prune(move[0])
    assert context.prune_move() is None
    sent = [b for m in context.messages() for b in m["content"] if isinstance(b, dict)]
    pages = [
        part for b in sent if b.get("type") == "tool_result" and isinstance(b["content"], list)
        for part in b["content"] if part["type"] == "document"
    ]  # fmt: skip
    assert len(pages) == 2  # two documents of 45 pages: 90, within the limit
