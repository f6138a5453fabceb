"""The README embeds the lifecycle diagram; it must be the machine's current one."""

from __future__ import annotations

import re
from pathlib import Path

from statemachine.contrib.diagram import formatter

from states import PodLifecycle

ROOT = Path(__file__).resolve().parents[2]


def test_readme_mermaid_matches_the_machine() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```mermaid\n(.*?)```", readme, flags=re.DOTALL)
    assert len(blocks) == 1, "the README should embed exactly one Mermaid diagram"
    expected = formatter.render(PodLifecycle, "mermaid").strip()
    assert blocks[0].strip() == expected, (
        "README's diagram is stale: paste the output of `pod diagram` into its mermaid block"
    )


def test_readme_opens_with_the_two_commands() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    fence = lines.index("```sh")
    commands = lines[fence + 1 : fence + 3]
    assert commands[0].startswith("./scripts/setup && .venv/bin/pod chat")
    assert commands[1].startswith("./scripts/setup && .venv/bin/pytest -q")
    # CI runs the README's test command (the part after the setup); a path it takes out of
    # that run with --ignore (the end-to-end and fault tests, which CI runs beside a CPU
    # burner: docs/testing.md) is run by a line of the same command of its own, so that
    # together they run every test the README's command does.
    test_command = commands[1].split("&&", 1)[1].split("#", 1)[0].strip()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "./scripts/setup" in ci
    words = len(test_command.split())
    runs = [line.split() for line in ci.splitlines() if line.startswith(test_command)]
    whole = [run for run in runs if all(arg.startswith("--ignore=") for arg in run[words:])]
    assert len(whole) == 1, runs
    [main] = whole
    for ignored in (arg.removeprefix("--ignore=") for arg in main[words:]):
        assert any(ignored in run[words:] for run in runs if run is not main), ignored
