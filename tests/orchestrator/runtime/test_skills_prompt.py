"""The ``## Skills`` section: names and descriptions only, within the budget, the rest named;
none when skills are off; prompt caching still marks the system prompt as one block."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.adapters.scoped_fs import ScopedFS
from orchestrator.capabilities.skills import pod_skills
from orchestrator.config.model import PodConfig
from orchestrator.core.prompt_cache import count_breakpoints, place_breakpoints
from orchestrator.runtime.system_prompt import build_system_prompt
from tests.orchestrator.capabilities.skills.library_files import user_library, write_skill


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws.resolve()


def _prompt(workspace: Path, **skills: object) -> tuple[str, list[str]]:
    config = PodConfig.model_validate({"workspace": workspace, "skills": skills})
    found = pod_skills(config)
    prompt = build_system_prompt(config, ScopedFS(workspace), found.listed)
    return prompt.text, prompt.sections


def test_a_skill_is_listed_by_name_and_description_not_its_body(workspace: Path) -> None:
    write_skill(user_library("skills"), "pdf", "Fill PDF forms", body="SECRET-BODY steps")
    text, sections = _prompt(workspace)
    assert sections[-1] == "skills"
    section = text.split("## Skills\n", 1)[1]
    assert "- pdf: Fill PDF forms" in section
    assert "call the `skill` tool" in section
    assert "SECRET-BODY" not in text


def test_past_the_budget_skills_are_named_only_and_the_section_says_so(workspace: Path) -> None:
    for n in range(6):
        write_skill(user_library("skills"), f"s{n}", "x" * 60)
    text, _ = _prompt(workspace, prompt_max_chars=200)
    section = text.split("## Skills\n", 1)[1]
    listed = [line for line in section.splitlines() if line.startswith("- ")]
    assert 1 <= len(listed) < 6
    assert sum(len(line) + 1 for line in listed) <= 200
    named = section.split("named only", 1)[1]
    assert "200 characters" in named
    rest = [f"s{n}" for n in range(len(listed), 6)]
    assert named.rstrip().endswith(", ".join(rest))


def test_a_description_cannot_break_the_prompt_with_lines_or_escapes(workspace: Path) -> None:
    folder = user_library("skills") / "odd"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        '---\ndescription: "line one\\n## Injected heading\\u001b[2J"\n---\nbody\n'
    )
    text, _ = _prompt(workspace)
    assert "\n## Injected heading" not in text and "\x1b" not in text
    assert "- odd: line one ## Injected heading\\x1b[2J" in text


def test_skills_off_leave_no_section(workspace: Path) -> None:
    write_skill(user_library("skills"), "pdf", "Fill PDF forms")
    text, sections = _prompt(workspace, enabled=False)
    assert "skills" not in sections and "## Skills" not in text


def test_the_system_prompt_with_skills_keeps_its_one_breakpoint(workspace: Path) -> None:
    write_skill(user_library("skills"), "pdf", "Fill PDF forms")
    text, _ = _prompt(workspace)
    messages = [{"role": "user", "content": [{"type": "text", "text": "go"}]}]
    placed = place_breakpoints(text, messages)
    # One system block, marked at its end, so the skills are read from the cache too.
    [block] = placed.system
    assert block["text"] == text and "cache_control" in block
    assert count_breakpoints({"system": placed.system, "messages": placed.messages}) == 2


def test_a_thousand_skills_cannot_flood_the_prompt(workspace: Path) -> None:
    for n in range(400):
        write_skill(user_library("skills"), f"skill-with-a-long-name-{n:04}", "d")
    text, _ = _prompt(workspace, prompt_max_chars=100)
    section = text.split("## Skills\n", 1)[1]
    assert len(section) < 100 + 2_000 + 600
    assert section.rstrip().endswith("more (pod skills ls)")
