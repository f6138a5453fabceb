"""The fake API's token counter and its view of a prompt, block by block."""

from __future__ import annotations

from conformance.tokens import (
    count_block_tokens,
    count_input_tokens,
    count_output_tokens,
    prompt_blocks,
)


def test_a_block_counts_a_quarter_of_its_canonical_json_bytes_plus_three() -> None:
    # {"text":"hello","type":"text"} is 30 bytes: ceil(30 / 4) = 8, plus 3.
    assert count_block_tokens({"type": "text", "text": "hello"}) == 11
    assert count_block_tokens({"type": "text", "text": "hello!!"}) == 11  # 32 bytes
    assert count_block_tokens({"type": "text", "text": "hello!!!"}) == 12  # 33 bytes
    # UTF-8 bytes count, not characters: "é" is two.
    assert count_block_tokens({"type": "text", "text": "héllo!!"}) == 12  # 33 bytes
    # Key order and cache_control do not count.
    marked = {"text": "hello", "cache_control": {"type": "ephemeral"}, "type": "text"}
    assert count_block_tokens(marked) == 11


def test_the_prompt_is_tools_then_system_then_messages() -> None:
    body = {
        "tools": [{"name": "t", "input_schema": {"type": "object"}}],
        "system": [{"type": "text", "text": "sys"}],
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "yo"}]},
        ],
    }
    blocks = prompt_blocks(body)
    assert [(b.section, b.location) for b in blocks] == [
        ("tools", "tools.0"),
        ("system", "system.0"),
        ("user", "messages.0.content"),
        ("assistant", "messages.1.content.0"),
    ]
    assert count_input_tokens(body) == sum(b.tokens for b in blocks)
    # A string system prompt or message is one text block.
    assert prompt_blocks({"system": "sys", "messages": []})[0].block == {
        "type": "text",
        "text": "sys",
    }


def test_prefix_hashes_ignore_cache_control_and_see_every_earlier_block() -> None:
    def hashes(system: str, marked: bool) -> list[str]:
        block = {"type": "text", "text": "q"} | (
            {"cache_control": {"type": "ephemeral"}} if marked else {}
        )
        body = {"system": system, "messages": [{"role": "user", "content": [block]}]}
        return [b.prefix_hash for b in prompt_blocks(body)]

    assert hashes("a", marked=True) == hashes("a", marked=False)
    changed = hashes("b", marked=False)
    assert all(x != y for x, y in zip(hashes("a", marked=False), changed, strict=True))
    # The same text as system prompt or as a message is not the same prefix.
    as_system = prompt_blocks({"system": "q", "messages": []})[0].prefix_hash
    as_user = prompt_blocks({"messages": [{"role": "user", "content": "q"}]})[0].prefix_hash
    assert as_system != as_user


def test_output_counts_like_input_and_is_never_zero() -> None:
    text = {"type": "text", "text": "hello"}
    assert count_output_tokens([text, text]) == 22
    assert count_output_tokens([]) == 1
