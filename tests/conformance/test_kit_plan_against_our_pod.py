"""The kit's plan-mode rows against our own pod, and against one that ignores plan mode."""

from __future__ import annotations

from conformance.driver import run_cases
from conformance.options import kit_options
from conformance.plan_cases import build_plan_cases
from tests.conformance.test_kit_against_our_pod import OUR_POD


def _options(command: list[str]):  # type: ignore[no-untyped-def]
    return kit_options(
        command,
        slow_tool=None,
        approval_tool=None,
        input_tool=None,
        timeout_s=40.0,
        thinking=False,
        thinking_args="",
        tree=False,
        continue_args="--continue",
    )


def test_every_plan_row_passes_against_our_pod() -> None:
    results = run_cases(build_plan_cases(), _options(OUR_POD))
    assert {r.id: r.outcome for r in results} == {
        "plan-refuses-unasked": "passed",
        "plan-approve": "passed",
        "plan-deny": "passed",
        "set_mode-unknown": "passed",
    }, [r.message() for r in results if r.outcome != "passed"]
    assert all(r.wire.invalid == 0 for r in results)


def test_a_pod_that_cannot_enter_plan_mode_fails_the_row_with_its_reason() -> None:
    """A pod that cannot enter plan mode (ours started read-only, the strictest mode) fails
    the row, and the report says why in the pod's words."""
    read_only = [*OUR_POD, "--permission-mode", "read-only"]
    (result,) = run_cases(
        [c for c in build_plan_cases() if c.id == "plan-refuses-unasked"], _options(read_only)
    )
    assert result.outcome == "failed"
    assert any("set_mode plan" in reason and "wider" in reason for reason in result.reasons)
