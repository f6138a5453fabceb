"""The prompt cache's accounting, as pure functions over a prompt's blocks."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.cache import (
    Breakpoint,
    CacheUsage,
    ManualClock,
    PromptCache,
    cache_breakpoints,
    plan_cache,
)
from conformance.tokens import PromptBlock, prompt_blocks
from conformance.validation import Rejected

MARK = {"type": "ephemeral"}


def prompt(texts: list[str], marks: dict[int, dict[str, Any]]) -> list[PromptBlock]:
    """One user message with a text block per entry; ``marks`` puts cache_control on some."""
    blocks = [
        {"type": "text", "text": t} | ({"cache_control": marks[i]} if i in marks else {})
        for i, t in enumerate(texts)
    ]
    return prompt_blocks({"messages": [{"role": "user", "content": blocks}]})


def tokens(blocks: list[PromptBlock], upto: int) -> int:
    """Tokens of blocks 0..upto."""
    return sum(b.tokens for b in blocks[: upto + 1])


def test_no_breakpoint_means_everything_is_input() -> None:
    blocks = prompt(["a" * 100, "b" * 100], {})
    plan = plan_cache(blocks, [], is_cached=lambda _: True, min_tokens=0)
    assert plan.usage == CacheUsage(input_tokens=tokens(blocks, 1))
    assert (plan.read_at, plan.writes, plan.renews) == (None, (), ())


def test_a_first_request_writes_up_to_its_last_breakpoint() -> None:
    blocks = prompt(["a" * 400, "b" * 400, "c" * 400], {0: MARK, 1: MARK | {"ttl": "1h"}})
    points = cache_breakpoints(blocks)
    assert points == [Breakpoint(0, "5m"), Breakpoint(1, "1h")]
    plan = plan_cache(blocks, points, is_cached=lambda _: False, min_tokens=0)
    assert plan.usage == CacheUsage(
        input_tokens=blocks[2].tokens,
        cache_creation_input_tokens=tokens(blocks, 1),
        ephemeral_5m_input_tokens=blocks[0].tokens,
        ephemeral_1h_input_tokens=blocks[1].tokens,
    )
    assert plan.writes == tuple(points)


@pytest.mark.parametrize(("distance", "hit"), [(20, True), (21, False)])
def test_a_lookup_reaches_back_twenty_blocks_and_no_further(distance: int, hit: bool) -> None:
    blocks = prompt([f"block {i} " * 30 for i in range(distance + 1)], {distance: MARK})
    cached = {blocks[0].prefix_hash}
    plan = plan_cache(
        blocks, cache_breakpoints(blocks), is_cached=cached.__contains__, min_tokens=0
    )
    assert plan.read_at == (0 if hit else None)
    read = blocks[0].tokens if hit else 0
    assert plan.usage.cache_read_input_tokens == read
    assert plan.usage.cache_creation_input_tokens == tokens(blocks, distance) - read


def test_the_longest_cached_prefix_wins_and_earlier_entries_are_renewed() -> None:
    blocks = prompt(["s" * 400, "a" * 400, "b" * 400, "c" * 400], {0: MARK, 3: MARK})
    cached = {blocks[0].prefix_hash, blocks[1].prefix_hash, blocks[2].prefix_hash}
    plan = plan_cache(
        blocks, cache_breakpoints(blocks), is_cached=cached.__contains__, min_tokens=0
    )
    assert plan.read_at == 2
    assert plan.usage.cache_read_input_tokens == tokens(blocks, 2)
    assert plan.usage.cache_creation_input_tokens == blocks[3].tokens
    assert plan.writes == (Breakpoint(3, "5m"),)
    assert sorted(plan.renews) == [0, 2]


def test_a_prefix_below_the_minimum_is_never_cached() -> None:
    blocks = prompt(["a" * 400, "b" * 400], {1: MARK})
    size = tokens(blocks, 1)
    below = plan_cache(
        blocks, cache_breakpoints(blocks), is_cached=lambda _: True, min_tokens=size + 1
    )
    assert below.usage == CacheUsage(input_tokens=size)
    assert below.writes == ()
    at = plan_cache(blocks, cache_breakpoints(blocks), is_cached=lambda _: False, min_tokens=size)
    assert at.usage.cache_creation_input_tokens == size


def test_the_request_level_cache_control_marks_the_last_cacheable_block() -> None:
    body = {
        "messages": [
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "a"},
                    {"type": "thinking", "thinking": "t", "signature": "s"},
                ],
            },
        ]
    }
    blocks = prompt_blocks(body)
    assert cache_breakpoints(blocks, MARK | {"ttl": "1h"}) == [Breakpoint(1, "1h")]
    # A block already marked is not marked twice.
    marked = prompt(["x", "y"], {1: MARK})
    assert cache_breakpoints(marked, MARK) == [Breakpoint(1, "5m")]


def test_more_than_four_breakpoints_is_the_real_400() -> None:
    five = prompt(["x"] * 5, {i: MARK for i in range(5)})
    with pytest.raises(
        Rejected, match=r"^A maximum of 4 blocks with cache_control may be provided\. Found 5\.$"
    ):
        cache_breakpoints(five)
    four = prompt(["x"] * 5, {i: MARK for i in range(4)})
    with pytest.raises(Rejected, match="Found 5"):
        cache_breakpoints(four, MARK)  # the request-level one is the fifth
    assert len(cache_breakpoints(four)) == 4


@pytest.mark.parametrize(
    ("mark", "message"),
    [
        (
            {"type": "persistent"},
            "messages.0.content.0.cache_control.type: Input should be 'ephemeral'",
        ),
        (
            {"type": "ephemeral", "ttl": "2h"},
            "messages.0.content.0.cache_control.ttl: Input should be '5m' or '1h'",
        ),
    ],
)
def test_a_malformed_cache_control_is_refused(mark: dict[str, Any], message: str) -> None:
    with pytest.raises(Rejected) as caught:
        cache_breakpoints(prompt(["x"], {0: mark}))
    assert (caught.value.status, caught.value.message) == (400, message)


def test_entries_expire_after_their_ttl_and_each_hit_renews_them() -> None:
    clock = ManualClock()
    cache = PromptCache(clock)
    blocks = prompt(["a" * 400], {0: MARK})
    points = cache_breakpoints(blocks)

    def read() -> int:
        return cache.account("m", blocks, points, min_tokens=0).cache_read_input_tokens

    assert read() == 0  # written
    clock.advance(299)
    assert read() == blocks[0].tokens  # hit, renewed for another 300 s
    clock.advance(299)
    assert read() == blocks[0].tokens
    clock.advance(300.5)
    assert len(cache) == 0
    assert read() == 0  # expired: written again
    # Another model does not share the entry.
    assert cache.account("other", blocks, points, min_tokens=0).cache_read_input_tokens == 0
