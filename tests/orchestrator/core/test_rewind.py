"""Rewind decided without I/O: the target, the checkpoint, what goes; and a session file's
rewind records read back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.adapters.session import CheckpointRecord, load_session
from orchestrator.core.history import AssistantMessage, History, TextBlock, UserMessage
from orchestrator.core.rewind import RewindError, checkpoint_before, plan_rewind


def conversation() -> list:  # type: ignore[type-arg]
    history = History()
    for n in range(3):
        history.new_turn()
        history.append(UserMessage(text=f"prompt {n}"))
        history.append(AssistantMessage(blocks=[TextBlock(text=f"answer {n}")]))
    return history.items


def checkpoint(seq: int, reason: str = "turn") -> CheckpointRecord:
    return CheckpointRecord(id=f"c{seq}{reason}", seq=seq, turn=1, reason=reason)  # type: ignore[arg-type]


def test_the_last_prompt_is_the_default_and_what_follows_it_goes() -> None:
    plan = plan_rewind(conversation(), [], None, "conversation")
    assert (plan.target.text, plan.dropped, plan.checkpoint) == ("prompt 2", 2, None)
    assert plan.conversation and not plan.code


def test_a_code_restore_takes_the_checkpoint_of_that_prompts_turn() -> None:
    records = [checkpoint(3), checkpoint(4, "round"), checkpoint(5)]
    plan = plan_rewind(conversation(), records, 3, "both")
    assert plan.checkpoint == records[0] and plan.dropped == 4
    # A round's checkpoint is not the state before a prompt.
    assert checkpoint_before([checkpoint(3, "round")], 3) is None


@pytest.mark.parametrize(
    ("to", "restore", "said"),
    [
        (2, "conversation", "cannot rewind to 2: item 2 is an assistant message"),
        (99, "conversation", "there is no item 99 in the conversation"),
        (3, "code", "no checkpoint was taken then"),
    ],
)
def test_what_cannot_be_done_is_said(to: int, restore: str, said: str) -> None:
    with pytest.raises(RewindError, match=said):
        plan_rewind(conversation(), [], to, restore)  # type: ignore[arg-type]


def test_nothing_to_rewind_in_an_empty_conversation() -> None:
    with pytest.raises(RewindError, match="no prompt yet"):
        plan_rewind([], [], None, "both")


def _write(path: Path, records: list[dict]) -> None:  # type: ignore[type-arg]
    header = {"type": "session", "pod": "p", "workspace": "/w", "created_ms": 1}
    path.write_text("".join(json.dumps(r) + "\n" for r in [header, *records]))


def _item(seq: int, turn: int, kind: str = "user_message") -> dict:  # type: ignore[type-arg]
    if kind == "user_message":
        return {"type": "item", "item": {"kind": kind, "seq": seq, "turn": turn, "text": "t"}}
    return {
        "type": "item",
        "item": {"kind": kind, "seq": seq, "turn": turn, "blocks": [{"type": "text", "text": "a"}]},
    }


def test_loading_applies_rewinds_and_keeps_numbers_going(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _write(
        path,
        [
            _item(1, 1),
            _item(2, 1, "assistant"),
            _item(3, 2),
            _item(4, 2, "assistant"),
            {"type": "rewind", "phase": "done", "to_seq": 3, "restore": "conversation"},
            _item(5, 3),
            _item(6, 3, "assistant"),
            {"type": "rewind", "phase": "done", "to_seq": 5, "restore": "code"},
        ],
    )
    loaded = load_session(path)
    # A code-only rewind leaves the conversation; seqs and turns never go back.
    assert [i.seq for i in loaded.items] == [1, 2, 5, 6]
    assert (loaded.next_seq, loaded.last_turn, loaded.pending_rewind) == (7, 3, None)


def test_an_intent_without_its_done_is_pending(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    intent = {
        "type": "rewind",
        "phase": "intent",
        "to_seq": 1,
        "restore": "both",
        "checkpoint": "c1",
    }
    _write(path, [_item(1, 1), _item(2, 1, "assistant"), intent])
    loaded = load_session(path)
    assert loaded.pending_rewind is not None and loaded.pending_rewind.checkpoint == "c1"
    assert [i.seq for i in loaded.items] == [1, 2]  # not applied until it is finished


def test_history_rewind_drops_the_tail_and_numbers_go_on() -> None:
    history = History(conversation())
    dropped = history.rewind(3)
    assert [i.seq for i in dropped] == [3, 4, 5, 6]
    assert history.append(UserMessage(text="again")).seq == 7
