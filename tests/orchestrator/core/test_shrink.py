"""Shrinking wire messages to a budget: oversized blocks cut, oldest messages dropped."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from orchestrator.core.shrink import cut_text, shrink_messages
from orchestrator.core.tokens import estimate_message
from orchestrator.core.validator import validate_wire

BIG = "a line of a very large attached file\n" * 300_000  # ~11 MB


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def assistant_call(call_id: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": call_id, "name": "bash", "input": {}}],
    }


def result(call_id: str, text: str) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": call_id, "content": text}
    return {"role": "user", "content": [block]}


def size(messages: list[dict[str, Any]]) -> int:
    return sum(estimate_message(m) for m in messages)


def test_a_huge_attachment_is_cut_to_head_and_tail_with_a_note() -> None:
    messages = [user("read this\n" + BIG), {"role": "assistant", "content": "ok"}]
    shrunk = shrink_messages(messages, budget=8000)
    assert size(shrunk) <= 8000
    text = shrunk[0]["content"][0]["text"]
    assert text.startswith("read this\na line") and text.endswith("large attached file\n")
    assert "bytes left out of this summary request" in text
    assert len(messages[0]["content"][0]["text"]) > 10_000_000  # the input is not mutated


def test_a_huge_tool_result_is_cut_and_the_request_stays_valid() -> None:
    messages = [user("go"), assistant_call("t1"), result("t1", BIG), user("and?")]
    shrunk = shrink_messages(messages, budget=6000)
    assert size(shrunk) <= 6000
    assert validate_wire(shrunk) == []
    assert shrunk[0] is messages[0]  # only the block too big was touched


def test_oldest_messages_go_first_and_the_rest_starts_with_a_plain_user_message() -> None:
    messages: list[dict[str, Any]] = []
    for k in range(50):
        messages += [
            user(f"q{k} " + "w" * 400),
            assistant_call(f"t{k}"),
            result(f"t{k}", "r" * 400),
        ]
    shrunk = shrink_messages(messages, budget=2000)
    assert size(shrunk) <= 2000
    assert shrunk[0]["content"][0]["type"] == "text"
    assert shrunk[-1] is messages[-1]  # the newest survive untouched
    assert shrunk == messages[len(messages) - len(shrunk) :]


def test_what_fits_is_returned_as_it_was() -> None:
    messages = [user("hi"), {"role": "assistant", "content": "hello"}]
    assert shrink_messages(messages, budget=1000) == messages


def test_when_even_the_last_exchange_is_too_big_it_is_cut_harder() -> None:
    messages = [user(BIG[:40_000]), assistant_call("t1"), result("t1", BIG[:40_000])]
    shrunk = shrink_messages(messages, budget=500)
    assert shrunk and shrunk[0]["role"] == "user"
    assert size(shrunk) <= 1000


@given(st.integers(min_value=0, max_value=5000), st.integers(min_value=64, max_value=2000))
def test_cut_text_fits_its_cap_and_keeps_both_ends(length: int, cap: int) -> None:
    text = "".join(chr(0x61 + i % 26) for i in range(length))
    out = cut_text(text, cap)
    if out is text:
        assert len(text) <= cap * 3.5
    else:
        assert out.startswith(text[:8]) and out.endswith(text[-8:])
        assert len(out.encode()) <= cap * 3.5 + 80
