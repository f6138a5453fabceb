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
    assert commands[1].startswith("./scripts/setup && ./scripts/test")
    # CI runs exactly the README's test command (the part after the setup), on a line of its own.
    test_command = commands[1].split("&&", 1)[1].split("#", 1)[0].strip()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert "./scripts/setup" in "\n".join(ci)
    assert test_command in [line.strip() for line in ci]


def test_the_test_command_runs_every_test_folder() -> None:
    """scripts/test's first run leaves out exactly the folders its second run takes (beside
    the burner), and nothing else: together they run every test ``pytest`` would."""
    script = (ROOT / "scripts" / "test").read_text(encoding="utf-8")
    busy = re.search(r"^BUSY=\((.*)\)$", script, flags=re.MULTILINE)
    assert busy is not None, "scripts/test should name the burner's folders in BUSY=(...)"
    folders = busy[1].split()
    assert folders and all((ROOT / folder).is_dir() for folder in folders), folders
    runs = [line.split() for line in script.splitlines() if line.startswith('"$PYTEST"')]
    assert runs == [
        ['"$PYTEST"', "-q", "-n", "auto", '"${BUSY[@]/#/--ignore=}"', '"$@"'],
        ['"$PYTEST"', "-q", "-n", "auto", '"${BUSY[@]}"', '"$@"'],
    ]
    assert "python -c 'while True: pass' &" in script
