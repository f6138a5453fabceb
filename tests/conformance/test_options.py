"""The one builder of the kit's options from command-line text (pod conformance and the
pytest plugin both use it)."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.options import (
    DEFAULT_APPROVAL_TOOL,
    DEFAULT_INPUT_TOOL,
    DEFAULT_SLOW_TOOL,
    OptionError,
    ToolOptionError,
    kit_options,
)


def build(command: str | list[str] = "pod serve {socket}", **given: Any) -> Any:
    texts: dict[str, Any] = {
        "slow_tool": None,
        "approval_tool": None,
        "input_tool": None,
        "timeout_s": 5.0,
        "thinking": False,
        "thinking_args": "--thinking 'budget 2000'",
        "tree": True,
        "continue_args": "--continue",
    }
    return kit_options(command, **(texts | given))


def test_defaults_and_shell_splitting() -> None:
    options = build()
    assert options.command == ("pod", "serve", "{socket}")
    assert (options.slow_tool, options.approval_tool, options.input_tool) == (
        DEFAULT_SLOW_TOOL,
        DEFAULT_APPROVAL_TOOL,
        DEFAULT_INPUT_TOOL,
    )
    assert options.thinking_args == ("--thinking", "budget 2000")
    assert options.continue_args == ("--continue",)
    # A command already split (the CLI's) is taken as it is.
    assert build(["pod", "serve --x", "{socket}"]).command == ("pod", "serve --x", "{socket}")


def test_a_tool_given_as_json_replaces_the_default() -> None:
    options = build(slow_tool='{"name": "sleepy", "input": {"s": 3}}')
    assert options.slow_tool == {"name": "sleepy", "input": {"s": 3}}
    assert options.approval_tool == DEFAULT_APPROVAL_TOOL


@pytest.mark.parametrize(
    ("prefix", "flag"), [("--", "--approval-tool"), ("--pod-", "--pod-approval-tool")]
)
def test_a_bad_tool_names_the_callers_flag(prefix: str, flag: str) -> None:
    with pytest.raises(ToolOptionError, match=f"^{flag} is not JSON"):
        build(approval_tool="{not json", flag_prefix=prefix)
    with pytest.raises(ToolOptionError, match=f"^{flag} must be"):
        build(approval_tool="[1]", flag_prefix=prefix)


def test_options_that_make_no_sense_are_an_option_error() -> None:
    with pytest.raises(OptionError, match="must contain"):
        build("pod serve")
    with pytest.raises(OptionError, match="the input tool"):
        build(input_tool='{"name": 3}')
    with pytest.raises(ValueError):  # an unclosed quote, as shlex says it
        build(thinking_args="--thinking 'adaptive")
