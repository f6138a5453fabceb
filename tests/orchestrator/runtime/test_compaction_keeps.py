"""What a compaction keeps: whole tool rounds, server pairs, and the user's requests."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from orchestrator.core.history import (
    AssistantMessage,
    Compaction,
    Item,
    ServerToolResultBlock,
    ServerToolUseBlock,
    TextBlock,
    ThinkingBlock,
    ToolResult,
    ToolUseBlock,
    UserMessage,
    item_from_json,
    item_to_json,
)
from orchestrator.core.validator import validate_wire
from orchestrator.core.wire import to_wire
from orchestrator.runtime.compaction import (
    FIRST_REQUEST_CHARS,
    carried_requests,
    plan_compaction,
)

PAGES: Any = [{"type": "web_search_result", "url": "https://a", "encrypted_content": "E"}]


def numbered(items: list[Item]) -> list[Item]:
    return [replace(item, seq=n, turn=1) for n, item in enumerate(items, start=1)]


def rounds(n: int, *, prompt: str = "fix it") -> list[Item]:
    """One turn of ``n`` tool rounds, each with thinking, two calls and their results."""
    items: list[Item] = [UserMessage(text=prompt)]
    for r in range(n):
        calls = [
            ToolUseBlock(id=f"toolu_{r}_{k}", name="read_file", input={"path": f"f{r}{k}"})
            for k in range(2)
        ]
        thinking = ThinkingBlock(thinking=f"round {r}", signature=f"sig{r}")
        items.append(AssistantMessage(blocks=[thinking, TextBlock(text=f"r{r}"), *calls]))
        items += [ToolResult(call_id=c.id, summary="read", content="x" * 99) for c in calls]
    items.append(AssistantMessage(blocks=[TextBlock(text="done")]))
    return numbered(items)


def whole(kept: list[Item]) -> bool:
    calls = {c.id for i in kept if isinstance(i, AssistantMessage) for c in i.tool_uses}
    results = {i.call_id for i in kept if isinstance(i, ToolResult)}
    return calls == results


def test_the_last_rounds_are_kept_whole_even_over_the_token_budget() -> None:
    body = rounds(6)
    plan = plan_compaction(body, keep_tokens=1, keep_rounds=2, tokens=lambda item: 50)
    assert plan is not None and plan.kept_rounds == 2
    opener = plan.kept[0]
    assert isinstance(opener, AssistantMessage) and opener.tool_uses
    assert [b.thinking for b in opener.blocks if isinstance(b, ThinkingBlock)] == ["round 4"]
    assert whole(plan.kept) and plan.summarised + plan.kept == body
    view = [UserMessage(text="[summary]"), *plan.kept, UserMessage(text="next")]
    assert validate_wire(to_wire(view)) == []


def test_rounds_that_would_fill_the_window_are_not_all_kept() -> None:
    body = rounds(6)
    plan = plan_compaction(
        body, keep_tokens=1, keep_rounds=4, rounds_ceiling=50 * 7, tokens=lambda item: 50
    )
    assert plan is not None and plan.kept_rounds == 2  # 2 rounds and the answer: 7 items
    assert whole(plan.kept) and isinstance(plan.kept[0], AssistantMessage)


def test_no_rounds_asked_keeps_only_what_fits_and_the_budget_adds_more() -> None:
    body = rounds(6)
    none = plan_compaction(body, keep_tokens=1, keep_rounds=0, tokens=lambda item: 50)
    assert none is not None and none.kept == body[-1:] and none.kept_rounds == 0
    more = plan_compaction(body, keep_tokens=50 * 10, keep_rounds=1, tokens=lambda item: 50)
    assert more is not None and more.kept_rounds == 3  # 10 items: three rounds of three, + done
    assert whole(more.kept)


def test_more_rounds_asked_than_there_are_keeps_all_but_the_first_request() -> None:
    body = rounds(2)
    plan = plan_compaction(body, keep_tokens=1, keep_rounds=5, tokens=lambda item: 50)
    assert plan is not None and plan.summarised == body[:1] and plan.kept_rounds == 2


def test_a_kept_round_never_starts_with_a_server_result_whose_call_is_cut_off() -> None:
    call = ServerToolUseBlock(id="srvtoolu_1", name="web_search", input={"query": "q"})
    found = ServerToolResultBlock(
        type="web_search_tool_result", tool_use_id="srvtoolu_1", content=PAGES
    )
    tool = ToolUseBlock(id="toolu_9", name="read_file", input={"path": "a"})
    body = numbered(
        [
            UserMessage(text="old " * 50),
            AssistantMessage(blocks=[TextBlock(text="old answer")]),
            UserMessage(text="find"),
            AssistantMessage(blocks=[call], stop_reason="pause_turn"),
            # The continuation is the last round: it opens with the paused call's result.
            AssistantMessage(blocks=[found, TextBlock(text="found"), tool]),
            ToolResult(call_id="toolu_9", summary="read", content="a"),
            AssistantMessage(blocks=[TextBlock(text="done")]),
        ]
    )
    plan = plan_compaction(body, keep_tokens=1, keep_rounds=1, tokens=lambda item: 10)
    assert plan is not None
    first = plan.kept[0]
    assert isinstance(first, AssistantMessage) and first.server_calls  # the call came along
    view = [UserMessage(text="[summary]"), *plan.kept, UserMessage(text="next")]
    assert validate_wire(to_wire(view)) == []


def test_the_latest_request_is_carried_verbatim_when_the_tail_lacks_it() -> None:
    body = rounds(6, prompt="Rename `foo` to `bar` everywhere — keep the API.\n  (exactly)")
    plan = plan_compaction(body, keep_tokens=1, keep_rounds=2, tokens=lambda item: 50)
    assert plan is not None
    prompt = body[0]
    assert isinstance(prompt, UserMessage)
    carried = carried_requests(prompt, prompt, plan)  # first and latest are one request
    assert len(carried) == 1 and carried[0].endswith("\n" + prompt.text)
    assert "latest" in carried[0]


def test_the_first_request_is_carried_capped_and_a_kept_latest_is_not_repeated() -> None:
    first = UserMessage(text="F" * (FIRST_REQUEST_CHARS * 3), seq=1)
    body = [first, *numbered(rounds(3, prompt="now this"))[1:]]
    body = [replace(item, seq=n) for n, item in enumerate(body, start=1)]
    plan = plan_compaction(body, keep_tokens=1, keep_rounds=1, tokens=lambda item: 50)
    assert plan is not None
    latest = UserMessage(text="and then this", seq=len(body) + 1)
    carried = carried_requests(body[0], latest, plan)  # type: ignore[arg-type]
    assert len(carried) == 1 and "first request" in carried[0]
    assert "F" * FIRST_REQUEST_CHARS in carried[0]
    assert "F" * (FIRST_REQUEST_CHARS + 1) not in carried[0]
    assert "more characters cut" in carried[0]


def test_requests_read_after_the_summary_and_old_records_load_unchanged() -> None:
    made = Compaction(
        summary="S",
        first_seq=1,
        last_seq=4,
        tokens_before=9,
        tokens_after=3,
        todos="[Open todos] ...",
        requests=["[The latest user request, verbatim]\nfix it"],
        kept_rounds=2,
        kept_request=True,
        open_todos=1,
    )
    assert made.text.index("S") < made.text.index("fix it") < made.text.index("[Open todos]")
    assert item_from_json(item_to_json(made)) == made
    old = {k: v for k, v in item_to_json(made).items()}
    for key in ("requests", "kept_rounds", "kept_request", "open_todos", "todos"):
        old.pop(key)
    loaded = item_from_json(old)
    assert isinstance(loaded, Compaction) and loaded.requests == [] and loaded.kept_rounds == 0
    bare = replace(loaded)
    assert set(item_to_json(bare)) == set(old)  # nothing new written when empty
