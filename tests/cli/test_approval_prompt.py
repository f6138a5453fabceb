"""How ``pod run`` reads a typed answer to an approval request."""

from __future__ import annotations

import pytest

from cli.approval_prompt import Answer, describe, parse_answer


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("y\n", Answer("approve", {"id": "t1", "scope": "once"})),
        ("YES", Answer("approve", {"id": "t1", "scope": "once"})),
        (" a ", Answer("approve", {"id": "t1", "scope": "session"})),
        ("always", Answer("approve", {"id": "t1", "scope": "session"})),
        ("n", Answer("deny", {"id": "t1"})),
        (
            "no   use git switch instead \n",
            Answer("deny", {"id": "t1", "message": "use git switch instead"}),
        ),
        ("", None),
        ("maybe", None),
        ("yn", None),
    ],
)
def test_a_typed_line_means_one_answer_or_none(line: str, expected: Answer | None) -> None:
    assert parse_answer("t1", line) == expected


def test_an_edit_request_shows_its_diff_under_the_reason() -> None:
    text = describe(
        {
            "tool": "edit_file",
            "summary": "edit a.py",
            "reason": "default mode asks before edit tools",
            "diff": "--- a/a.py\n+++ b/a.py\n-x\n+y",
        }
    )
    assert text.splitlines() == [
        "? edit_file: edit a.py",
        "  (default mode asks before edit tools)",
        "  --- a/a.py",
        "  +++ b/a.py",
        "  -x",
        "  +y",
    ]


def test_a_request_to_keep_held_paths_shows_what_was_written() -> None:
    text = describe(
        {
            "tool": "bash",
            "arguments": {"command": "git init"},
            "summary": "keep what it planted: .git (created)",
            "reason": "held aside: approve puts them back, deny leaves them undone",
            "diff": "--- /dev/null\n+++ b/.git/config\n+\tfsmonitor = touch /x\n+#\x1b[2K",
            "held": [".git"],
        }
    )
    # The question is the summary's (keep what was planted), not the command's, which ran.
    assert text.splitlines()[0] == "? bash: keep what it planted: .git (created)"
    assert "  +\tfsmonitor = touch /x" in text.splitlines()
    assert "\x1b" not in text and "  +#\\x1b[2K" in text.splitlines()


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("y", Answer("approve", {"id": "p1"})),
        ("always", Answer("approve", {"id": "p1"})),  # a plan is approved once, always
        ("y accept-edits", Answer("approve", {"id": "p1", "mode": "accept-edits"})),
        ("Y Default", Answer("approve", {"id": "p1", "mode": "default"})),
        ("y plan", None),  # an approved plan leaves plan mode
        ("y fastest", None),
        (
            "n split the second step",
            Answer("deny", {"id": "p1", "message": "split the second step"}),
        ),
    ],
)
def test_a_plan_is_approved_for_a_mode_or_refused_with_what_to_change(
    line: str, expected: Answer | None
) -> None:
    assert parse_answer("p1", line, plan=True) == expected


def test_a_plan_is_shown_whole_and_escaped() -> None:
    plan = "## Plan\n\n1. edit `a.py`\n2. \x1b[2Jclear the screen?"
    text = describe(
        {
            "tool": "exit_plan_mode",
            "kind": "plan",
            "arguments": {"plan": plan},
            "summary": "leave plan mode with this plan (4 lines)",
            "reason": "leaving plan mode needs your approval of the plan",
        }
    )
    lines = text.splitlines()
    assert lines[0] == "? exit_plan_mode: leave plan mode with this plan (4 lines)"
    assert "    ## Plan" in lines and "    1. edit `a.py`" in lines
    assert "\x1b" not in text and "\\x1b[2J" in text
