"""Repair on load: any damage to a session file's lines leaves a wire-valid history."""

from __future__ import annotations

import json
import random
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator.adapters.session import SessionWriter, load_session
from orchestrator.config.model import PodConfig
from orchestrator.core.history import (
    AssistantMessage,
    Compaction,
    History,
    Item,
    SystemMessage,
    TextBlock,
    ToolResult,
    ToolUseBlock,
    UserMessage,
)
from orchestrator.core.repair import (
    LOST_RESULT_SUMMARY,
    LOST_START_NOTE,
    close_orphans,
    repair_loaded,
)
from orchestrator.core.validator import validate_wire
from orchestrator.core.wire import to_wire
from orchestrator.runtime.context import Context


def _conversation(turns: list[list[int]]) -> list[Item]:
    """A valid history: per turn, a user message then rounds calling ``n`` tools each."""
    history = History()
    n = 0
    for rounds in turns:
        history.new_turn()
        history.append(UserMessage(text=f"turn {history.turn}"))
        for calls in rounds:
            ids = [f"toolu_{(n := n + 1)}" for _ in range(calls)]
            history.append(
                AssistantMessage(
                    blocks=[
                        TextBlock(text="working"),
                        *(ToolUseBlock(id=i, name="bash") for i in ids),
                    ]
                )
            )
            for i in ids:
                history.append(ToolResult(call_id=i, summary=f"ran {i}"))
        history.append(AssistantMessage(blocks=[TextBlock(text="done")]))
        history.append(SystemMessage(text="[Notification] ping"))
    return history.items


def _valid_after_next_run(items: list[Item]) -> list[str]:
    """What the pod sends on the next ``run``: open calls closed, then a user message."""
    nxt = [*items, *close_orphans(items), UserMessage(text="next")]
    return [str(v) for v in validate_wire(to_wire(nxt))]


def test_an_undamaged_history_is_left_alone() -> None:
    items = _conversation([[2], [1, 1]])
    repair = repair_loaded(items, turn_closed=True)
    assert repair.notes == []
    assert repair.items is items


def test_a_lost_result_is_marked_and_a_stray_one_dropped() -> None:
    items = _conversation([[2]])
    damaged = [i for i in items if not (isinstance(i, ToolResult) and i.call_id == "toolu_1")]
    stray = ToolResult(call_id="toolu_x", summary="from nowhere", seq=99, turn=1)
    repair = repair_loaded([*damaged, stray], turn_closed=True)
    lost = [i for i in repair.items if isinstance(i, ToolResult) and i.call_id == "toolu_1"]
    assert [(r.summary, r.seq, r.synthetic) for r in lost] == [(LOST_RESULT_SUMMARY, 0, True)]
    assert all(getattr(i, "call_id", "") != "toolu_x" for i in repair.items)
    assert repair.notes == [
        "tool call toolu_1 (bash) had no result: marked as lost",
        "item 99: a result for toolu_x that answers no open call was dropped",
    ]
    assert _valid_after_next_run(repair.items) == []


def test_swapped_lines_go_back_in_order_and_a_bad_id_is_dropped() -> None:
    items = _conversation([[1]])
    swapped = [items[0], items[2], items[1], *items[3:]]
    repair = repair_loaded(swapped, turn_closed=True)
    assert repair.items == items
    assert repair.notes == ["items were out of order and have been put back in sequence"]
    corrupt = AssistantMessage(
        seq=items[1].seq, turn=1, blocks=[ToolUseBlock(id="toolu 1\n", name="bash")]
    )
    repair = repair_loaded([items[0], corrupt, *items[2:]], turn_closed=True)
    assert _valid_after_next_run(repair.items) == []
    assert "item 2: a malformed or repeated tool call was dropped" in repair.notes


def test_a_lost_first_message_gets_a_note() -> None:
    items = _conversation([[1]])
    repair = repair_loaded(items[1:], turn_closed=True)
    assert isinstance(repair.items[0], SystemMessage) and repair.items[0].text == LOST_START_NOTE
    assert _valid_after_next_run(repair.items) == []


def test_an_open_turn_keeps_its_pending_calls_for_resume() -> None:
    history = History(_conversation([[1]]))
    history.new_turn()
    history.append(UserMessage(text="go on"))
    history.append(AssistantMessage(blocks=[ToolUseBlock(id="toolu_open", name="bash")]))
    repair = repair_loaded(history.items, turn_closed=False)
    assert repair.notes == [] and repair.items is history.items
    closed = repair_loaded(history.items, turn_closed=True)
    assert closed.notes == ["tool call toolu_open (bash) had no result: marked as lost"]


DAMAGE = ("drop", "repeat", "swap", "garble", "bad_id", "bad_result_id", "blank")


def _damage(lines: list[bytes], kind: str, rng: random.Random) -> list[bytes]:
    body = lines[1:]
    if not body:
        return lines
    k = rng.randrange(len(body))
    if kind == "drop":
        del body[k]
    elif kind == "repeat":
        body.insert(k, body[k])
    elif kind == "swap":
        j = rng.randrange(len(body))
        body[k], body[j] = body[j], body[k]
    elif kind == "garble":
        body[k] = body[k][: len(body[k]) // 2]
    else:
        try:
            record = json.loads(body[k])
        except ValueError:
            return lines  # already garbled
        item = record.get("item", {})
        if kind == "bad_id" and item.get("kind") == "assistant":
            for block in item["blocks"]:
                if block["type"] == "tool_use":
                    block["id"] = "toolu bad/" + block["id"]
        elif kind == "bad_result_id" and item.get("kind") == "tool_result":
            item["call_id"] = "toolu_elsewhere"
        elif kind == "blank" and item.get("kind") in ("user_message", "system_message"):
            item["text"] = "  "
        body[k] = json.dumps(record).encode()
    return [lines[0], *body]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    turns=st.lists(st.lists(st.integers(1, 3), max_size=3), min_size=1, max_size=4),
    damages=st.lists(st.sampled_from(DAMAGE), min_size=1, max_size=4),
    seed=st.integers(0, 2**32),
    closed=st.booleans(),
)
def test_any_damage_loads_wire_valid(
    tmp_path: Path, turns: list[list[int]], damages: list[str], seed: int, closed: bool
) -> None:
    path = tmp_path / f"s{seed}.jsonl"
    path.unlink(missing_ok=True)
    writer = SessionWriter(path, pod="p", workspace=tmp_path)
    for item in _conversation(turns):
        writer.append_item(item)
    writer.close()
    rng = random.Random(seed)
    lines = path.read_bytes().splitlines()
    for kind in damages:
        lines = _damage(lines, kind, rng)
    path.write_bytes(b"\n".join(lines) + b"\n")
    loaded = load_session(path)
    repair = repair_loaded(loaded.items, turn_closed=closed)
    assert _valid_after_next_run(repair.items) == []
    again = repair_loaded(repair.items, turn_closed=closed)
    assert again.items == repair.items  # idempotent
    assert [i for i in again.notes if "out of order" not in i] == []


def _compacted_view(items: list[Item]) -> list[dict[str, object]]:
    history = History()
    for item in items:
        history.items.append(item)
    context = Context(config=PodConfig(workspace=Path("/tmp")), history=history)
    return context.messages()


def test_a_compaction_whose_range_splits_a_call_from_its_result_is_moved_back() -> None:
    """Issue 27 §7: a damaged ``last_seq`` must not send a result without its call."""
    items = _conversation([[2], [1, 1]])
    maker = next(
        i for i in items if isinstance(i, AssistantMessage) and i.tool_uses and i.turn == 2
    )
    compaction = Compaction(
        summary="so far",
        first_seq=1,
        last_seq=maker.seq,
        tokens_before=1,
        tokens_after=1,
        seq=items[-1].seq + 1,
        turn=2,
    )
    damaged = [*items, compaction]
    assert validate_wire(_compacted_view(damaged))  # the damage is real: a stray result
    repaired = repair_loaded(damaged, turn_closed=True)
    assert any("split a tool call" in note for note in repaired.notes)
    fixed = repaired.items[-1]
    assert isinstance(fixed, Compaction) and fixed.last_seq == maker.seq - 1
    assert validate_wire(_compacted_view(repaired.items)) == []
    again = repair_loaded(repaired.items, turn_closed=True)
    assert again.items[-1] == fixed  # idempotent


def test_a_compaction_left_with_nothing_to_summarise_is_dropped() -> None:
    items = _conversation([[1]])
    maker = next(i for i in items if isinstance(i, AssistantMessage) and i.tool_uses)
    compaction = Compaction(
        summary="so far",
        first_seq=maker.seq,
        last_seq=maker.seq,
        tokens_before=1,
        tokens_after=1,
        seq=items[-1].seq + 1,
        turn=1,
    )
    repaired = repair_loaded([*items, compaction], turn_closed=True)
    assert not any(isinstance(i, Compaction) for i in repaired.items)
    assert validate_wire(_compacted_view(repaired.items)) == []
