"""The output chokepoint: string summarising, the content cap, the interrupted result."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from orchestrator.core.history import INTERRUPTED_SUMMARY
from orchestrator.core.tool_output import (
    SUMMARY_THRESHOLD,
    ToolOutput,
    cap_content,
    interrupted_output,
    line_count,
    to_tool_output,
    truncation_marker,
    utf8_cut,
)


def test_short_string_is_summary_only() -> None:
    text = "x" * SUMMARY_THRESHOLD
    assert to_tool_output(text) == ToolOutput(summary=text)


def test_threshold_counts_utf8_bytes_not_characters() -> None:
    text = "é" * (SUMMARY_THRESHOLD // 2 + 1)  # fewer characters than the threshold, more bytes
    assert to_tool_output(text).content == text


def test_long_string_gets_line_count_and_first_line() -> None:
    first = "a" * 100
    text = first + "\n" + "b\n" * 200
    assert to_tool_output(text) == ToolOutput(summary=f"201 lines | {'a' * 80}…", content=text)


def test_tool_output_passes_through_unchanged() -> None:
    output = ToolOutput(summary="s", content="c", is_error=True)
    assert to_tool_output(output) is output


def test_line_count_ignores_trailing_newline() -> None:
    assert [line_count(t) for t in ("", "a", "a\n", "a\nb", "a\n\n")] == [0, 1, 1, 2, 2]


def test_cap_leaves_small_and_empty_content_alone() -> None:
    small = ToolOutput(summary="s", content="abc")
    assert cap_content(small, 3) is small
    summary_only = ToolOutput(summary="s" * 100_000)
    assert cap_content(summary_only, 10) is summary_only


def test_cap_cuts_content_and_says_exactly_how_much() -> None:
    output = ToolOutput(summary="big " * 50, content="0123456789" * 10, is_error=True)
    capped = cap_content(output, 25)
    assert capped == ToolOutput(
        summary=output.summary,
        content="0123456789012345678901234\n[truncated: 75 bytes dropped, refine your query]",
        is_error=True,
    )


def test_cap_does_not_add_a_newline_after_one() -> None:
    capped = cap_content(ToolOutput(summary="s", content="line\n" * 10), 10)
    assert capped.content == "line\nline\n" + truncation_marker(40)


def test_cap_cuts_on_a_utf8_boundary() -> None:
    # "é" is 2 bytes, "€" 3, "😀" 4; a cut at 6 falls inside the "😀".
    content = "é€😀z"
    capped = cap_content(ToolOutput(summary="s", content=content), 6)
    assert capped.content == "é€\n[truncated: 5 bytes dropped, refine your query]"


def test_utf8_cut_backs_up_to_a_character_start() -> None:
    data = "a😀".encode()
    assert [utf8_cut(data, n) for n in range(7)] == [0, 1, 1, 1, 1, 5, 5]


@given(st.text(), st.integers(min_value=0, max_value=64))
def test_cap_keeps_a_maximal_valid_prefix_and_counts_the_rest(text: str, limit: int) -> None:
    data = text.encode()
    capped = cap_content(ToolOutput(summary="s", content=text), limit).content
    assert capped is not None
    if len(data) <= limit:
        assert capped == text
        return
    found = re.search(r"\[truncated: (\d+) bytes dropped, refine your query\]\Z", capped)
    assert found is not None
    kept_bytes = len(data) - int(found[1])
    assert limit - 4 < kept_bytes <= limit  # as much as fits without splitting a character
    kept = data[:kept_bytes].decode()  # raises if the cut split a character
    separator = "" if kept.endswith("\n") or not kept else "\n"
    assert capped == kept + separator + found[0]


def test_interrupted_output_with_partial_output() -> None:
    output = interrupted_output(2.345, ["compiling\n", "linking"], 1000)
    assert output == ToolOutput(
        summary=INTERRUPTED_SUMMARY,
        content="stopped by the user after 2.3 s; output so far:\ncompiling\nlinking",
        is_error=True,
    )
    assert output.summary == "[Interrupted by user]"


def test_interrupted_output_without_output() -> None:
    output = interrupted_output(0.04, [], 1000)
    assert output == ToolOutput(
        summary="[Interrupted by user]",
        content="stopped by the user after 0.0 s; no output",
        is_error=True,
    )


def test_interrupted_output_is_capped() -> None:
    output = interrupted_output(1.0, ["x" * 5000], 100)
    assert output.content is not None
    assert output.content.startswith("stopped by the user after 1.0 s; output so far:\nxxx")
    head = "stopped by the user after 1.0 s; output so far:\n"
    dropped = len(head) + 5000 - 100
    assert output.content.endswith(f"\n[truncated: {dropped} bytes dropped, refine your query]")
