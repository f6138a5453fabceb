"""``pod skills ls`` and ``pod agents ls``: where each comes from, what shadows it, and why a
file was refused, as text a terminal shows (never obeys) and as JSON."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.claude_dirs import claude_dirs_on
from tests.cli.helpers import pod


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_skills_ls_names_sources_shadows_and_refusals(
    env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    env = {**env, "HOME": str(home)}
    claude_dirs_on(env["XDG_CONFIG_HOME"])
    user = Path(env["XDG_CONFIG_HOME"]) / "pod" / "skills"
    _write(user / "pdf" / "SKILL.md", "---\ndescription: Fill forms\nallowed-tools: Read\n---\n")
    _write(workspace / ".claude" / "skills" / "pdf" / "SKILL.md", "---\ndescription: theirs\n---\n")
    _write(home / ".claude" / "skills" / "bad" / "SKILL.md", "---\n[1]\n---\n")
    os.mkfifo(workspace / ".claude" / "skills" / "pipe")
    listed = json.loads(pod(env, "skills", "ls", "-w", str(workspace), "--json").stdout)
    rows = {(row["name"], row["source"]): row for row in listed["skills"]}
    assert set(rows) == {("pdf", "user"), ("pdf", "claude-workspace")}
    assert rows[("pdf", "user")]["shadowed_by"] is None
    assert rows[("pdf", "user")]["allowed_tools"] == ["Read"]
    assert rows[("pdf", "claude-workspace")]["shadowed_by"] == str(user / "pdf" / "SKILL.md")
    assert len(listed["refused"]) == 2
    assert any("mapping" in reason for reason in listed["refused"])
    assert any("not a regular file" in reason for reason in listed["refused"])
    text = pod(env, "skills", "ls", "-w", str(workspace)).stdout
    assert "pdf  [user]  Fill forms" in text and "refused:" in text


def test_skills_ls_says_when_skills_are_off(env: dict[str, str], workspace: Path) -> None:
    _write(workspace / ".pod" / "config.toml", "[skills]\nenabled = false\n")
    assert "Skills are off" in pod(env, "skills", "ls", "-w", str(workspace)).stdout


def test_agents_ls_lists_config_agents_and_files(
    env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    env = {**env, "HOME": str(tmp_path / "home")}
    claude_dirs_on(env["XDG_CONFIG_HOME"])
    _write(workspace / ".pod" / "config.toml", '[agents.scout]\ndescription = "toml scout"\n')
    _write(workspace / ".claude" / "agents" / "scout.md", "---\ndescription: file scout\n---\n")
    _write(
        workspace / ".claude" / "agents" / "fixer.md",
        "---\ndescription: fixes\ntools: Read, Edit\nmodel: sonnet\n---\nFix.\n",
    )
    listed = json.loads(pod(env, "agents", "ls", "-w", str(workspace), "--json").stdout)
    rows = {(row["name"], row["source"]): row for row in listed["agents"]}
    assert rows[("scout", "config")]["shadowed_by"] is None
    assert rows[("scout", "claude-workspace")]["shadowed_by"] == "[agents] in the config"
    assert rows[("fixer", "claude-workspace")]["tools"] == ["Read", "Edit"]
    assert rows[("fixer", "claude-workspace")]["model"] == "sonnet"
