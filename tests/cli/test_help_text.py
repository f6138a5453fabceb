"""Help as a person reads it at 80 columns: paragraphs wrapped at the screen's width, not at
the docstring's line breaks, and a usage line without template braces."""

from __future__ import annotations

from cli.options import rewrapped
from tests.cli.helpers import pod


def test_a_paragraphs_lines_are_joined_and_lists_and_tables_kept() -> None:
    doc = "First line\nof the summary.\n\nA body that\nruns on.\n- an item\n- another\n\n\b\nT:\n  0  x\n  1  y"
    assert rewrapped(doc) == (
        "First line of the summary.\n\nA body that runs on.\n- an item\n- another\n\nT:\n  0  x\n  1  y"
    )


def test_pod_run_help_wraps_paragraphs_at_80_columns(env: dict[str, str]) -> None:
    shown = pod(env, "run", "--help", env_extra={"COLUMNS": "80"})
    lines = [line.strip() for line in shown.stdout.splitlines()]
    # The docstring breaks after "has a" and "conversation,"; the screen wraps elsewhere.
    assert "conversation, unless --new or --session says otherwise." in lines
    assert "conversation," not in lines
    usage = next(line for line in lines if line.startswith("Usage:"))
    assert usage.endswith("run [OPTIONS] [PROMPT]")  # optional: --attach takes none


def test_usage_lines_name_required_arguments_in_capitals(env: dict[str, str]) -> None:
    shown = pod(env, "sessions", "title", "--help")
    usage = next(line.strip() for line in shown.stdout.splitlines() if "Usage:" in line)
    assert usage.endswith("title [OPTIONS] SESSION TEXT"), usage


def test_group_and_command_help_is_rewrapped_too(env: dict[str, str]) -> None:
    shown = pod(env, "sessions", "ls", "--help", env_extra={"COLUMNS": "200"})
    # "state: live (…), turn open (its last turn never ended: …" spans three source lines.
    assert "turn open (its last turn never ended: it was paused or the pod died;" in shown.stdout
