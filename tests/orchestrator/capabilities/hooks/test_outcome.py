"""What hooks' exit codes and output mean, event by event (Claude Code's contract)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from orchestrator.capabilities.hooks import HookEvent, HookRun, decide

PRE = HookEvent.PRE_TOOL_USE


def ok(stdout: Any = "", **fields: Any) -> HookRun:
    text = stdout if isinstance(stdout, str) else json.dumps(stdout)
    return HookRun(command="h", outcome="ok", code=0, stdout=text, **fields)


def exit_(code: int, stderr: str = "", **fields: Any) -> HookRun:
    return HookRun(command="h", outcome="ok", code=code, stderr=stderr, **fields)


def test_exit_2_denies_a_call_with_stderr_as_the_reason() -> None:
    verdict = decide(PRE, [exit_(2, "no rm\n")])
    assert (verdict.permission, verdict.reason) == ("deny", "no rm")


def test_deny_wins_over_ask_over_allow_whatever_the_order() -> None:
    allow = ok({"hookSpecificOutput": {"permissionDecision": "allow"}})
    ask = ok({"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "?"}})
    assert decide(PRE, [allow, ask]).permission == "ask"
    assert decide(PRE, [ask, exit_(2, "x"), allow]).permission == "deny"
    assert decide(PRE, [allow]).permission == "allow"
    assert decide(PRE, [ok("")]).permission is None


def test_the_older_decision_field_still_works() -> None:
    assert decide(PRE, [ok({"decision": "block", "reason": "r"})]).permission == "deny"
    assert decide(PRE, [ok({"decision": "approve"})]).permission == "allow"


def test_the_first_rewrite_counts() -> None:
    first = ok({"hookSpecificOutput": {"updatedInput": {"command": "a"}}})
    second = ok({"hookSpecificOutput": {"updatedInput": {"command": "b"}}})
    assert decide(PRE, [first, second]).updated_input == {"command": "a"}


@pytest.mark.parametrize(
    ("run", "why"),
    [
        (exit_(1, "boom"), "exit code 1: boom"),
        (exit_(-9), "killed by signal 9"),
        (HookRun(command="h", outcome="timeout", detail="no answer within 1 s"), "no answer"),
        (HookRun(command="h", outcome="failed", detail="it could not start"), "could not start"),
        (ok('{"continue": "maybe"}'), "its JSON output is not the hook contract's"),
    ],
)
def test_a_failure_alerts_and_blocks_a_call_only_where_on_failure_says_block(
    run: HookRun, why: str
) -> None:
    blocked = decide(PRE, [dataclasses.replace(run, on_failure="block")])
    assert blocked.permission == "deny" and why in blocked.reason
    assert blocked.alerts and why in blocked.alerts[0][1]
    let_through = decide(PRE, [run])  # on_failure "continue", the default
    assert let_through.permission is None and why in let_through.alerts[0][1]
    assert "the call goes on" in let_through.alerts[0][1]


def test_a_refusal_already_reported_blocks_as_before_without_a_new_alert() -> None:
    refused = HookRun(command="h", outcome="failed", detail="not run: x changed", quiet=True)
    assert decide(PRE, [refused]) == decide(PRE, [ok("")])
    strict = decide(PRE, [dataclasses.replace(refused, on_failure="block")])
    assert strict.permission == "deny" and "x changed" in strict.reason and not strict.alerts


def test_a_failure_elsewhere_only_alerts() -> None:
    verdict = decide(HookEvent.STOP, [exit_(1, "boom")])
    assert not verdict.block and verdict.alerts == [
        ("warn", "Stop hook 'h' failed: exit code 1: boom")
    ]


def test_an_interrupted_hook_counts_as_not_run() -> None:
    verdict = decide(PRE, [HookRun(command="h", outcome="interrupted", on_failure="block")])
    assert verdict.permission is None and not verdict.alerts


def test_plain_stdout_is_context_only_where_claude_code_makes_it_context() -> None:
    assert decide(HookEvent.USER_PROMPT_SUBMIT, [ok("style: tabs\n")]).context == ["style: tabs"]
    assert decide(HookEvent.SESSION_START, [ok("issues: 3")]).context == ["issues: 3"]
    assert decide(HookEvent.POST_TOOL_USE, [ok("chatter")]).context == []
    assert decide(PRE, [ok("chatter")]).permission is None


def test_exit_2_means_what_the_event_allows() -> None:
    assert decide(HookEvent.USER_PROMPT_SUBMIT, [exit_(2, "secret")]).block
    stop = decide(HookEvent.STOP, [exit_(2, "run the tests")])
    assert stop.block and stop.reason == "run the tests"
    post = decide(HookEvent.POST_TOOL_USE, [exit_(2, "lint failed")])
    assert post.block and post.reasons == ["lint failed"]
    compact = decide(HookEvent.PRE_COMPACT, [exit_(2, "not now")])
    assert not compact.block and compact.alerts == [("warn", "PreCompact hook: not now")]


def test_json_fields_for_every_event() -> None:
    verdict = decide(
        HookEvent.POST_TOOL_USE,
        [
            ok(
                {
                    "decision": "block",
                    "reason": "tests fail",
                    "systemMessage": "linted",
                    "hookSpecificOutput": {"additionalContext": "2 warnings"},
                    "unknownField": 1,
                }
            )
        ],
    )
    assert verdict.block and verdict.reasons == ["tests fail"]
    assert verdict.context == ["2 warnings"] and verdict.alerts == [("info", "linted")]
    stopped = decide(PRE, [ok({"continue": False, "stopReason": "enough"})])
    assert stopped.stop == "enough" and stopped.permission is None


def test_a_long_reason_is_cut() -> None:
    verdict = decide(PRE, [exit_(2, "x" * 10_000)])
    assert len(verdict.reason) < 4100 and verdict.reason.endswith("[…]")
