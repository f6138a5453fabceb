"""The server tools' rules of the validator: each broken once and kept once."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.core.validator import IncrementalValidator, validate_wire
from tests.orchestrator.core.test_validator import assistant, result, rules, text, use, user


def search(call_id: str = "srvtoolu_1", name: str = "web_search") -> dict[str, Any]:
    """A server_tool_use block."""
    return {"type": "server_tool_use", "id": call_id, "name": name, "input": {"query": "q"}}


def found(call_id: str = "srvtoolu_1", kind: str = "web_search_tool_result") -> dict[str, Any]:
    """A server tool's result block, its content opaque as the API's is."""
    content = [{"type": "web_search_result", "url": "https://a.example", "encrypted_content": "E"}]
    return {"type": kind, "tool_use_id": call_id, "content": content}


def failed(call_id: str = "srvtoolu_1") -> dict[str, Any]:
    """A search result that says the search failed (the form the pod closes calls with)."""
    error = {"type": "web_search_tool_result_error", "error_code": "unavailable"}
    return {"type": "web_search_tool_result", "tool_use_id": call_id, "content": error}


def test_a_search_and_its_result_in_one_message_is_valid() -> None:
    messages = [user(text("find")), assistant(search(), found(), text("here")), user(text("more"))]
    assert validate_wire(messages) == []


def test_a_pause_turn_continuation_may_end_in_the_paused_assistant_content() -> None:
    paused = [user(text("find")), assistant(text("looking"), search())]
    assert validate_wire(paused) == []
    done = [user(text("find")), assistant(text("looking"), search(), found())]
    assert validate_wire(done) == []


def test_a_plain_assistant_last_is_still_a_prefill() -> None:
    assert rules([user(text("find")), assistant(text("hi"))]) == [("last_user", 1)]


def test_an_open_server_call_before_a_user_message_is_refused() -> None:
    messages = [user(text("find")), assistant(text("looking"), search()), user(text("next"))]
    violations = validate_wire(messages)
    assert [(v.rule, v.index) for v in violations] == [("unanswered_server_tool_use", 1)]
    assert "without a corresponding `web_search_tool_result` block" in violations[0].message


def test_closing_with_an_error_result_in_the_next_assistant_item_is_valid() -> None:
    # The synthetic close: a separate assistant item, merged into the same wire message.
    messages = [
        user(text("find")),
        assistant(text("looking"), search()),
        assistant(failed()),
        user(text("next")),
    ]
    assert validate_wire(messages) == []


def test_the_mixed_case_is_valid_up_to_the_tool_results() -> None:
    messages = [user(text("go")), assistant(search(), use("toolu_1")), user(result("toolu_1"))]
    assert validate_wire(messages) == []


def test_in_the_mixed_case_the_result_opens_the_next_assistant_content() -> None:
    opened = [
        user(text("go")),
        assistant(search(), use("toolu_1")),
        user(result("toolu_1")),
        assistant({"type": "thinking", "thinking": "t", "signature": "s"}, found(), text("ok")),
        user(text("next")),
    ]
    assert validate_wire(opened) == []
    late = [*opened[:3], assistant(text("ok"), found()), user(text("next"))]
    assert sorted(r for r, _ in rules(late)) == [
        "server_result_orphan",
        "unanswered_server_tool_use",
    ]
    missing = [*opened[:3], assistant(text("ok")), user(text("next"))]
    assert rules(missing) == [("unanswered_server_tool_use", 3)]


def test_a_result_without_its_call_is_refused_in_the_api_words() -> None:
    violations = validate_wire([user(text("go")), assistant(found("srvtoolu_9")), user(text("n"))])
    assert [(v.rule, v.index) for v in violations] == [("server_result_orphan", 1)]
    assert violations[0].message.startswith(
        "unexpected `tool_use_id` found in `web_search_tool_result` blocks: srvtoolu_9."
    )


def test_a_result_before_its_call_is_an_orphan() -> None:
    messages = [user(text("go")), assistant(found(), search()), user(text("n"))]
    assert [r for r, _ in rules(messages)] == ["server_result_orphan", "unanswered_server_tool_use"]


def test_a_tool_result_never_answers_a_server_call() -> None:
    messages = [
        user(text("go")),
        assistant(search(), use("toolu_1")),
        user(result("srvtoolu_1"), result("toolu_1")),
    ]
    assert rules(messages) == [("tool_result_for_server_tool", 2)]


def test_a_server_call_is_answered_once_by_its_own_kind() -> None:
    twice = [user(text("go")), assistant(search(), found(), found()), user(text("n"))]
    assert rules(twice) == [("duplicate_server_result", 1)]
    fetch = [user(text("go")), assistant(search(), found(kind="web_fetch_tool_result"))]
    assert rules(fetch) == [("server_result_mismatch", 1)]


def test_server_ids_are_unique_across_the_conversation() -> None:
    messages = [
        user(text("go")),
        assistant(search(), found()),
        user(text("again")),
        assistant(search(), found()),
        user(text("n")),
    ]
    assert rules(messages) == [("duplicate_tool_use_id", 3)]


def test_a_malformed_server_call_is_refused() -> None:
    bad = {"type": "server_tool_use", "id": "srv tool", "name": "web_search", "input": "q"}
    assert rules([user(text("go")), assistant(bad)]) == [("bad_server_tool_use", 1)]


def test_server_blocks_do_not_belong_in_a_user_message() -> None:
    assert rules([user(text("go"), found())]) == [("unknown_block", 0)]


def test_a_server_call_may_follow_a_client_call_but_a_result_may_not() -> None:
    calls = [user(text("go")), assistant(use("toolu_1"), search()), user(result("toolu_1"))]
    assert validate_wire(calls) == []
    after = [
        user(text("go")),
        assistant(search(), use("toolu_1"), found()),
        user(result("toolu_1")),
    ]
    assert ("content_after_tool_use", 1) in rules(after)


STEP = st.sampled_from(
    ["user", "text", "search_done", "search_open", "mixed", "results", "close", "orphan"]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(STEP, min_size=1, max_size=30))
def test_incremental_equals_full_with_server_blocks(steps: list[str]) -> None:
    """Growing a conversation of server blocks one message at a time, the incremental
    validator says what a fresh full validation says."""
    messages: list[dict[str, Any]] = []
    incremental = IncrementalValidator()
    for n, step in enumerate(steps):
        sid, cid = f"srvtoolu_{n}", f"toolu_{n}"
        last = messages[-1] if messages else None
        block: list[dict[str, Any]]
        if step == "user":
            block, role = [text(f"u{n}")], "user"
        elif step == "text":
            block, role = [text(f"a{n}")], "assistant"
        elif step == "search_done":
            block, role = [search(sid), found(sid)], "assistant"
        elif step == "search_open":
            block, role = [search(sid)], "assistant"
        elif step == "mixed":
            block, role = [search(sid), use(cid)], "assistant"
        elif step == "results":
            ids = [b["id"] for b in (last or {}).get("content", []) if b["type"] == "tool_use"]
            block, role = [result(i) for i in ids] or [text(f"r{n}")], "user"
        elif step == "close":
            block, role = [failed(f"srvtoolu_{n - 1}")], "assistant"
        else:
            block, role = [found(f"srvtoolu_x{n}")], "assistant"
        if last is not None and last["role"] == role:
            # The wire builder merges same-role items into the last message (a new dict).
            messages[-1] = {"role": role, "content": last["content"] + block}
        else:
            messages.append({"role": role, "content": block})
        assert incremental.validate(list(messages)) == validate_wire(copy.deepcopy(messages))
