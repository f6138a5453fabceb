"""Turning the ``~/.claude`` folders back on for a test (tests/conftest.py turns them off, so
that the machine's own skills, commands and agents never reach a test's pod)."""

from __future__ import annotations

from pathlib import Path


def claude_dirs_on(config_home: str | Path) -> None:
    """Make the isolated user config (under ``XDG_CONFIG_HOME``) read ``~/.claude`` again, as
    a user's default config does; the test gives ``HOME`` a folder of its own."""
    config = Path(config_home) / "pod" / "config.toml"
    text = config.read_text()
    assert "claude_dirs = false" in text, text
    config.write_text(text.replace("claude_dirs = false", "claude_dirs = true"))
