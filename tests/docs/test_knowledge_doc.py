"""docs/knowledge.md: its example record is clean, and the prompt section it shows is real."""

from __future__ import annotations

import re
from pathlib import Path

from orchestrator.adapters.scoped_fs import ScopedFS
from orchestrator.capabilities.knowledge import (
    lint_knowledge,
    memory_fs,
    read_memory,
    search_knowledge,
)
from orchestrator.config.loading import load_config
from orchestrator.runtime.system_prompt import build_system_prompt

DOC = Path(__file__).resolve().parents[2] / "docs" / "knowledge.md"


def _fenced(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)


def test_the_example_record_is_clean_resident_and_found(tmp_path: Path) -> None:
    (record,) = _fenced("markdown")
    folder = tmp_path / "knowledge"
    folder.mkdir()
    (folder / "release-steps.md").write_text(record)
    assert lint_knowledge(tmp_path) == []
    fs = memory_fs(tmp_path)
    assert read_memory(fs, tmp_path, "release-steps").startswith("1. Bump the version")
    assert [hit.slug for hit in search_knowledge(fs, tmp_path, "changelog tag")] == [
        "release-steps"
    ]

    prompt = build_system_prompt(load_config(tmp_path), ScopedFS(tmp_path)).text
    shown = _fenced("text")[0]
    section = prompt[prompt.index("## Resident knowledge") :]
    assert section.split() == shown.split()  # the same words; the doc wraps long lines


def test_the_documented_settings_load(tmp_path: Path) -> None:
    (settings,) = _fenced("toml")
    (tmp_path / ".pod").mkdir()
    (tmp_path / ".pod" / "config.toml").write_text(settings)
    config = load_config(tmp_path)
    assert config.memory.enabled and config.inject_resident_knowledge
