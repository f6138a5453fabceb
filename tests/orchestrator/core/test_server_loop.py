"""Server calls in the history: closing them (cancel, new prompt, load repair) and keeping
them with their results (compaction's kept tail). Each history is checked on the wire."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator.adapters.session import SessionWriter, load_session
from orchestrator.core.history import (
    AssistantMessage,
    Block,
    History,
    Item,
    ServerToolResultBlock,
    ServerToolUseBlock,
    SystemMessage,
    TextBlock,
    ToolResult,
    ToolUseBlock,
    UserMessage,
)
from orchestrator.core.model_output import normalize_reply
from orchestrator.core.repair import (
    close_orphans,
    interrupt_note,
    pending_tool_calls,
    repair_loaded,
)
from orchestrator.core.server_loop import (
    awaits_continuation,
    open_server_calls,
    sound_server_blocks,
)
from orchestrator.core.validator import validate_wire
from orchestrator.core.wire import to_wire
from orchestrator.runtime.compaction import plan_compaction
from tests.orchestrator.core.test_repair_loaded import DAMAGE, _damage

PAGES: Any = [{"type": "web_search_result", "url": "https://a", "encrypted_content": "E"}]


def call(call_id: str = "srvtoolu_1", name: str = "web_search") -> ServerToolUseBlock:
    return ServerToolUseBlock(id=call_id, name=name, input={"query": "q"})


def found(call_id: str = "srvtoolu_1") -> ServerToolResultBlock:
    return ServerToolResultBlock(type="web_search_tool_result", tool_use_id=call_id, content=PAGES)


def numbered(items: list[Item]) -> list[Item]:
    from dataclasses import replace

    return [replace(item, seq=n, turn=1) for n, item in enumerate(items, start=1)]


def next_prompt(items: list[Item]) -> list[Item]:
    """What a new prompt over a paused turn commits: closes, the note, the prompt."""
    return [*items, *close_orphans(items), interrupt_note(), UserMessage(text="next")]


def test_a_paused_loop_awaits_its_continuation_and_a_new_prompt_closes_it() -> None:
    paused = AssistantMessage(blocks=[TextBlock(text="looking"), call()], stop_reason="pause_turn")
    items: list[Item] = [UserMessage(text="find"), paused]
    assert awaits_continuation(items)
    assert validate_wire(to_wire(items)) == []  # the continuation itself
    after = next_prompt(items)
    closing = after[2]
    assert isinstance(closing, AssistantMessage) and closing.synthetic
    [block] = closing.blocks
    assert isinstance(block, ServerToolResultBlock)
    assert block.content == {"type": "web_search_tool_result_error", "error_code": "unavailable"}
    assert not awaits_continuation(after[:3])
    assert validate_wire(to_wire(after)) == []
    assert close_orphans(after[:3]) == []  # idempotent


def test_a_fetch_is_closed_with_a_fetch_error() -> None:
    paused = AssistantMessage(blocks=[call(name="web_fetch")], stop_reason="pause_turn")
    [closing] = close_orphans([UserMessage(text="get"), paused])
    assert isinstance(closing, AssistantMessage)
    assert closing.blocks[0].type == "web_fetch_tool_result"
    assert closing.blocks[0].content["type"] == "web_fetch_tool_result_error"


def test_a_complete_pause_needs_no_closing() -> None:
    paused = AssistantMessage(blocks=[call(), found()], stop_reason="pause_turn")
    items: list[Item] = [UserMessage(text="find"), paused]
    assert close_orphans(items) == []
    assert validate_wire(to_wire(next_prompt(items))) == []


def test_the_mixed_message_closes_client_calls_first_then_the_server_call() -> None:
    mixed = AssistantMessage(blocks=[call(), ToolUseBlock(id="toolu_1", name="glob")])
    items: list[Item] = [UserMessage(text="go"), mixed]
    closes = close_orphans(items)
    assert [type(c) for c in closes] == [ToolResult, AssistantMessage]
    assert validate_wire(to_wire(next_prompt(items))) == []
    # Results given, before the API answered the search: the closing opens the next content.
    answered: list[Item] = [*items, ToolResult(call_id="toolu_1", summary="ok")]
    state = open_server_calls(answered)
    assert state.mixed and state.followed and state.closable
    assert validate_wire(to_wire(next_prompt(answered))) == []


def test_load_repair_closes_an_open_call_only_when_the_turn_was_closed() -> None:
    paused = AssistantMessage(blocks=[call()], stop_reason="pause_turn")
    items = numbered([UserMessage(text="find"), paused])
    still_open = repair_loaded(items, turn_closed=False)
    assert still_open.items == items  # Resume continues it
    closed = repair_loaded(items, turn_closed=True)
    assert closed.notes and isinstance(closed.items[-1], AssistantMessage)
    assert validate_wire(to_wire([*closed.items, UserMessage(text="next")])) == []
    again = repair_loaded(closed.items, turn_closed=True)
    assert again.notes == []  # idempotent


def test_load_repair_closes_a_call_a_note_was_committed_after() -> None:
    # A damaged or older file: notes after an open call. The close goes before them.
    paused = AssistantMessage(blocks=[call()], stop_reason="pause_turn")
    items = numbered([UserMessage(text="find"), paused, SystemMessage(text="a note")])
    repaired = repair_loaded(items, turn_closed=False)
    assert [type(i).__name__ for i in repaired.items] == [
        "UserMessage", "AssistantMessage", "AssistantMessage", "SystemMessage",
    ]  # fmt: skip
    assert validate_wire(to_wire(repaired.items)) == []


def test_load_repair_keeps_a_message_that_holds_only_server_blocks() -> None:
    items = numbered(
        [
            UserMessage(text="find"),
            AssistantMessage(blocks=[call(), found()]),
            UserMessage(text="n"),
        ]
    )
    assert repair_loaded(items, turn_closed=True).items == items


def test_compaction_never_keeps_a_result_without_its_call() -> None:
    # A pause_turn split over two items: the continuation opens with the first's result.
    body: list[Item] = numbered(
        [
            UserMessage(text="old " * 50),
            AssistantMessage(blocks=[TextBlock(text="old answer " * 50)]),
            UserMessage(text="find"),
            AssistantMessage(blocks=[call()], stop_reason="pause_turn"),
            AssistantMessage(blocks=[found(), TextBlock(text="found")]),
        ]
    )
    plan = plan_compaction(body, keep_tokens=1, tokens=lambda item: 10)
    assert plan is not None
    assert isinstance(plan.kept[0], AssistantMessage) and plan.kept[0].server_calls
    summary_view = [UserMessage(text="summary"), *plan.kept, UserMessage(text="next")]
    assert validate_wire(to_wire(summary_view)) == []
    assert validate_wire(to_wire([*plan.summarised, UserMessage(text="summarise")])) == []


def test_server_blocks_the_api_would_refuse_later_are_dropped_before_commit() -> None:
    earlier: list[Item] = [
        UserMessage(text="find"),
        AssistantMessage(blocks=[call("srvtoolu_old"), found("srvtoolu_old")]),
        UserMessage(text="again"),
    ]
    reply: list[Block] = [
        call("srvtoolu_old"),  # an id already taken
        found("srvtoolu_old"),  # goes with the dropped call
        found("srvtoolu_ghost"),  # answers nothing
        call("srvtoolu_new"),
        found("srvtoolu_new"),
        found("srvtoolu_new"),  # answered twice
        TextBlock(text="ok"),
    ]
    kept, alerts = sound_server_blocks(earlier, list(reply), earlier_ids={"srvtoolu_old"})
    assert kept == [call("srvtoolu_new"), found("srvtoolu_new"), TextBlock(text="ok")]
    assert len(alerts) == 4
    committed = [*earlier, AssistantMessage(blocks=kept), UserMessage(text="next")]
    assert validate_wire(to_wire(committed)) == []


def test_a_continuation_may_answer_the_paused_call_anywhere_a_mixed_one_only_first() -> None:
    paused: list[Item] = [
        UserMessage(text="find"),
        AssistantMessage(blocks=[call()], stop_reason="pause_turn"),
    ]
    late: list[Block] = [TextBlock(text="so"), found()]
    assert sound_server_blocks(paused, list(late), earlier_ids={"srvtoolu_1"})[0] == late
    mixed: list[Item] = [
        UserMessage(text="go"),
        AssistantMessage(blocks=[call(), ToolUseBlock(id="toolu_1", name="glob")]),
        ToolResult(call_id="toolu_1", summary="ok"),
    ]
    kept, alerts = sound_server_blocks(mixed, list(late), earlier_ids={"srvtoolu_1"})
    assert kept == [TextBlock(text="so")] and alerts
    first: list[Block] = [found(), TextBlock(text="so")]
    assert sound_server_blocks(mixed, list(first), earlier_ids={"srvtoolu_1"})[0] == first


def test_a_client_call_under_a_server_id_gets_a_fresh_client_id() -> None:
    reply = normalize_reply(
        [call("srvtoolu_1"), found(), ToolUseBlock(id="srvtoolu_1", name="glob")],
        earlier_ids=set(),
    )
    client = [b for b in reply.blocks if isinstance(b, ToolUseBlock)]
    assert client[0].id.startswith("toolu_") and reply.alerts


def test_load_repair_drops_a_result_whose_call_line_was_lost() -> None:
    # The pause_turn item is gone; its continuation opens with the result of the lost call.
    items = numbered(
        [
            UserMessage(text="find"),
            AssistantMessage(blocks=[found("srvtoolu_lost"), TextBlock(text="found")]),
            UserMessage(text="next"),
        ]
    )
    repaired = repair_loaded(items, turn_closed=True)
    assert any("srvtoolu_lost" in note for note in repaired.notes)
    assert validate_wire(to_wire(repaired.items)) == []
    assert repair_loaded(repaired.items, turn_closed=True).notes == []


def _server_conversation(turns: list[list[str]]) -> list[Item]:
    """A valid history of server tool loops: per turn a prompt, then steps: ``done`` (a
    search answered in its message), ``pause`` (a pause_turn with its call open, continued by
    the next item), ``mixed`` (a call open beside a client call, answered after the result)."""
    history = History()
    n = 0
    for steps in turns:
        history.new_turn()
        history.append(UserMessage(text=f"turn {history.turn}"))
        for step in steps:
            n += 1
            sid, cid = f"srvtoolu_{n}", f"toolu_{n}"
            if step == "done":
                history.append(AssistantMessage(blocks=[call(sid), found(sid)]))
            elif step == "pause":
                history.append(AssistantMessage(blocks=[call(sid)], stop_reason="pause_turn"))
                history.append(AssistantMessage(blocks=[found(sid), TextBlock(text="so")]))
            else:
                history.append(
                    AssistantMessage(blocks=[call(sid), ToolUseBlock(id=cid, name="bash")])
                )
                history.append(ToolResult(call_id=cid, summary="ran"))
                history.append(AssistantMessage(blocks=[found(sid), TextBlock(text="so")]))
        history.append(AssistantMessage(blocks=[TextBlock(text="done")]))
    return history.items


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    turns=st.lists(
        st.lists(st.sampled_from(["done", "pause", "mixed"]), max_size=3), min_size=1, max_size=3
    ),
    damages=st.lists(st.sampled_from(DAMAGE), min_size=1, max_size=4),
    seed=st.integers(0, 2**32),
    closed=st.booleans(),
)
def test_any_damage_to_server_loops_loads_wire_valid(
    tmp_path: Path, turns: list[list[str]], damages: list[str], seed: int, closed: bool
) -> None:
    """Lines of a session with search loops lost, repeated, swapped or garbled: loaded, the
    history is wire-valid for the next run (and for Resume's continuation), and repair is
    idempotent."""
    path = tmp_path / f"s{seed}.jsonl"
    path.unlink(missing_ok=True)
    writer = SessionWriter(path, pod="p", workspace=tmp_path)
    for item in _server_conversation(turns):
        writer.append_item(item)
    writer.close()
    rng = random.Random(seed)
    lines = path.read_bytes().splitlines()
    for kind in damages:
        lines = _damage(lines, kind, rng)
    path.write_bytes(b"\n".join(lines) + b"\n")
    repair = repair_loaded(load_session(path).items, turn_closed=closed)
    nxt = [*repair.items, *close_orphans(repair.items), UserMessage(text="next")]
    assert validate_wire(to_wire(nxt)) == []
    resumable = awaits_continuation(repair.items) or (
        bool(repair.items)
        and isinstance(repair.items[-1], ToolResult)
        and not pending_tool_calls(repair.items)
    )
    if not closed and resumable:  # what Resume sends: the continuation, or the results
        assert validate_wire(to_wire(repair.items)) == []
    again = repair_loaded(repair.items, turn_closed=closed)
    assert again.items == repair.items


@settings(max_examples=150, deadline=None)
@given(
    turns=st.lists(
        st.lists(st.sampled_from(["done", "pause", "mixed"]), max_size=3), min_size=1, max_size=3
    ),
    keep=st.integers(1, 400),
    cut_back=st.integers(0, 6),
)
def test_any_compaction_plan_keeps_server_pairs_together(
    turns: list[list[str]], keep: int, cut_back: int
) -> None:
    """Whatever the budget, and with the history cut anywhere inside a loop (a paused turn):
    the kept tail after a summary, and the summarised part asked about, are both valid."""
    items = _server_conversation(turns)
    items = items[: max(2, len(items) - cut_back)]
    plan = plan_compaction(items, keep_tokens=keep, tokens=lambda item: 10)
    if plan is None:
        return
    kept = [UserMessage(text="summary"), *plan.kept]
    closes = close_orphans(kept)
    assert validate_wire(to_wire([*kept, *closes, UserMessage(text="next")])) == []
    asked = [*plan.summarised, UserMessage(text="summarise")]
    assert validate_wire(to_wire(asked)) == []
