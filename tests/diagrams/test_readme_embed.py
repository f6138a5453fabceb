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
    # CI runs exactly the README's test command (the part after the setup).
    test_command = commands[1].split("&&", 1)[1].split("#", 1)[0].strip()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "./scripts/setup" in ci and f"\n{test_command}\n" in ci
