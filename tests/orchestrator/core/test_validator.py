"""Each rule of the validator: a request that breaks it and one that keeps it."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.core.validator import (
    WireInvalidError,
    WireViolation,
    check_wire,
    merge_same_role,
    validate_wire,
)


def user(*blocks: dict[str, Any]) -> dict[str, Any]:
    """A user message."""
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    """An assistant message."""
    return {"role": "assistant", "content": list(blocks)}


def text(value: str = "hi") -> dict[str, Any]:
    """A text block."""
    return {"type": "text", "text": value}


def use(call_id: str, name: str = "Read", input: Any = None) -> dict[str, Any]:
    """A tool_use block."""
    return {
        "type": "tool_use",
        "id": call_id,
        "name": name,
        "input": {} if input is None else input,
    }


def result(call_id: str) -> dict[str, Any]:
    """A tool_result block."""
    return {"type": "tool_result", "tool_use_id": call_id, "content": "ok"}


def rules(messages: list[dict[str, Any]], **kwargs: Any) -> list[tuple[str, int]]:
    """The (rule, index) pairs a request breaks."""
    return [(v.rule, v.index) for v in validate_wire(messages, **kwargs)]


def test_valid_tool_round_has_no_violation() -> None:
    messages = [
        user(text("read a")),
        assistant(text("ok"), use("t1"), use("t2")),
        user(result("t1"), result("t2"), text("note")),
    ]
    assert validate_wire(messages) == []


def test_first_user() -> None:
    assert rules([assistant(text()), user(text())]) == [("first_user", 0)]
    assert rules([user(text()), assistant(text()), user(text())]) == []


def test_last_user() -> None:
    assert rules([user(text()), assistant(text())]) == [("last_user", 1)]
    assert rules([user(text()), assistant(text())], allow_prefill=True) == []


def test_empty_content() -> None:
    assert rules([]) == [("empty_content", 0)]
    assert rules([user()]) == [("empty_content", 0)]
    assert rules([user(text("  \n"))]) == [("empty_content", 0)]
    assert rules([user(text("x"))]) == []
    assert rules([{"role": "user", "content": "plain string"}]) == []


def test_unknown_block() -> None:
    assert rules([user(text(), {"type": "thinking", "thinking": "x"})]) == [("unknown_block", 0)]
    assert rules([user(text()), assistant(result("t1")), user(text())]) == [
        ("unknown_block", 1),
    ]
    png = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}}
    url = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
    assert rules([user(text(), png, url), assistant(text()), user(text())]) == []


@pytest.mark.parametrize(
    "source",
    [
        None,
        {"type": "url", "url": ""},
        {"type": "base64", "media_type": "image/bmp", "data": "Qk0="},
        {"type": "base64", "media_type": "image/png", "data": ""},
    ],
)
def test_bad_image(source: object) -> None:
    assert rules([user(text(), {"type": "image", "source": source})]) == [("bad_image", 0)]


def test_documents_are_taken_in_a_user_message_and_in_a_tool_result() -> None:
    pdf = {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"},
    }
    plain = {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "x"},
    }
    in_result = {**result("t1"), "content": [text("the report"), pdf]}
    messages = [user(text(), pdf, plain), assistant(use("t1")), user(in_result)]
    assert rules(messages) == []


@pytest.mark.parametrize(
    "source",
    [
        None,
        {"type": "base64", "media_type": "application/msword", "data": "0M8R"},
        {"type": "base64", "media_type": "application/pdf", "data": ""},
        {"type": "url", "url": ""},
    ],
)
def test_bad_document(source: object) -> None:
    document = {"type": "document", "source": source}
    assert rules([user(text(), document)]) == [("bad_document", 0)]
    in_result = {**result("t1"), "content": [text("the report"), document]}
    messages = [user(text()), assistant(use("t1")), user(in_result)]
    assert rules(messages) == [("bad_document", 2)]


def test_bad_image_inside_a_tool_result() -> None:
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/bmp", "data": "Qk0="},
    }
    in_result = {**result("t1"), "content": [text("a shot"), image]}
    assert rules([user(text()), assistant(use("t1")), user(in_result)]) == [("bad_image", 2)]


def test_bad_role() -> None:
    assert rules([user(text()), {"role": "system", "content": [text()]}, user(text())]) == [
        ("bad_role", 1)
    ]


def test_content_after_tool_use() -> None:
    messages = [user(text()), assistant(use("t1"), text("after")), user(result("t1"))]
    assert rules(messages) == [("content_after_tool_use", 1)]
    messages = [user(text()), assistant(text("before"), use("t1")), user(result("t1"))]
    assert rules(messages) == []


def test_unanswered_tool_use_in_next_user_message() -> None:
    messages = [user(text()), assistant(use("t1"), use("t2")), user(result("t1"))]
    assert validate_wire(messages) == [
        WireViolation(
            "unanswered_tool_use", 2, "tool_use t2 has no tool_result in the next message"
        )
    ]


def test_unanswered_tool_use_at_the_end() -> None:
    assert rules([user(text()), assistant(use("t1"))], allow_prefill=True) == [
        ("unanswered_tool_use", 1)
    ]


def test_unanswered_tool_use_before_the_next_assistant_message() -> None:
    # Same-role neighbours merge, so the second assistant message follows the tool_use at once.
    messages = [user(text()), assistant(use("t1")), assistant(text("more")), user(text())]
    assert rules(messages) == [("content_after_tool_use", 1), ("unanswered_tool_use", 2)]


def test_results_first() -> None:
    messages = [user(text()), assistant(use("t1")), user(text("note"), result("t1"))]
    assert rules(messages) == [("results_first", 2)]
    messages = [user(text()), assistant(use("t1")), user(result("t1"), text("note"))]
    assert rules(messages) == []


def test_stray_tool_result() -> None:
    assert rules([user(result("t9"))]) == [("stray_tool_result", 0)]
    messages = [
        user(text()),
        assistant(use("t1")),
        user(result("t1")),
        assistant(text()),
        user(result("t1")),
    ]
    assert rules(messages) == [("stray_tool_result", 4)]


def test_duplicate_result() -> None:
    messages = [user(text()), assistant(use("t1")), user(result("t1"), result("t1"))]
    assert rules(messages) == [("duplicate_result", 2)]


def test_duplicate_tool_use_id() -> None:
    messages = [
        user(text()),
        assistant(use("t1")),
        user(result("t1")),
        assistant(use("t1")),
        user(result("t1")),
    ]
    assert rules(messages) == [("duplicate_tool_use_id", 3)]
    messages[3] = assistant(use("t2"))
    messages[4] = user(result("t2"))
    assert rules(messages) == []


@pytest.mark.parametrize(
    "block",
    [use("", "Read"), use("t1", ""), use("t1", "Read", input=[1])],
    ids=["no-id", "no-name", "list-input"],
)
def test_bad_tool_use(block: dict[str, Any]) -> None:
    call_id = block["id"]
    assert rules([user(text()), assistant(block), user(result(call_id))]) == [("bad_tool_use", 1)]


def test_merge_same_role_concatenates_neighbours() -> None:
    messages = [
        user(text("a")),
        {"role": "user", "content": "b"},
        assistant(text("c")),
        assistant(use("t1")),
        user(result("t1")),
    ]
    assert merge_same_role(messages) == [
        {"role": "user", "content": [text("a"), text("b")]},
        {"role": "assistant", "content": [text("c"), use("t1")]},
        {"role": "user", "content": [result("t1")]},
    ]


def test_results_split_over_two_user_messages_are_paired_after_merging() -> None:
    messages = [
        user(text()),
        assistant(use("t1"), use("t2")),
        user(result("t1")),
        user(result("t2")),
    ]
    assert validate_wire(messages) == []


def test_violation_indices_refer_to_merged_messages() -> None:
    messages = [user(text()), user(text()), assistant(text())]
    assert rules(messages) == [("last_user", 1)]


def test_check_wire_raises_with_every_violation() -> None:
    with pytest.raises(WireInvalidError) as info:
        check_wire([assistant(use("t1"))])
    assert [v.rule for v in info.value.violations] == [
        "first_user",
        "last_user",
        "unanswered_tool_use",
    ]
    assert str(info.value).startswith("messages[0]: the first message must be from the user")
    check_wire([user(text())])


# -- extended thinking (issue 21) ------------------------------------------------------------

SIGNED = {"type": "thinking", "thinking": "plan", "signature": "sig"}
REDACTED = {"type": "redacted_thinking", "data": "opaque"}


def test_thinking_blocks_must_carry_their_signature_or_data() -> None:
    unsigned = {"type": "thinking", "thinking": "plan", "signature": ""}
    empty = {"type": "redacted_thinking", "data": ""}
    assert rules([user(text()), assistant(unsigned, text()), user(text())]) == [
        ("unsigned_thinking", 1)
    ]
    assert rules([user(text()), assistant(empty, text()), user(text())]) == [
        ("unsigned_thinking", 1)
    ]
    assert rules([user(text()), assistant(SIGNED, REDACTED, text()), user(text())]) == []


def test_with_thinking_on_a_continued_tool_loop_starts_with_its_thinking() -> None:
    loop = [user(text()), assistant(text("reading"), SIGNED, use("t1")), user(result("t1"))]
    assert rules(loop, thinking=True) == [("thinking_first", 1)]
    assert rules(loop) == []  # thinking off: no such rule
    # A reply that did not think (adaptive thinking may not) has nothing to start with.
    unthought = [user(text()), assistant(text("reading"), use("t1")), user(result("t1"))]
    assert rules(unthought, thinking=True) == []
    for first in (SIGNED, REDACTED):
        started = [user(text()), assistant(first, use("t1")), user(result("t1"))]
        assert rules(started, thinking=True) == []


def test_with_thinking_on_a_new_user_turn_needs_no_thinking_before_it() -> None:
    ended = [user(text()), assistant(text("done")), user(text("next"))]
    assert rules(ended, thinking=True) == []
