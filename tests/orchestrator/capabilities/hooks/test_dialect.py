"""Calls shown to hooks in Claude Code's words, and rewrites taken back."""

from __future__ import annotations

from pathlib import Path

from orchestrator.capabilities.hooks.dialect import claude_name, from_claude, to_claude

WS = Path("/work/project")


def test_tools_with_a_counterpart_are_named_and_shaped_as_claude_code_has_them() -> None:
    assert claude_name("bash") == "Bash" and claude_name("edit_file") == "Edit"
    assert claude_name("mcp__github__search") == "mcp__github__search"
    assert to_claude("bash", {"command": "ls", "timeout_s": 2}, WS) == {
        "command": "ls",
        "timeout": 2000,
    }
    assert to_claude("write_file", {"path": "src/a.py", "content": "x"}, WS) == {
        "file_path": "/work/project/src/a.py",
        "content": "x",
    }
    assert to_claude("grep", {"pattern": "x", "case_insensitive": True}, WS) == {
        "pattern": "x",
        "-i": True,
    }


def test_a_rewrite_comes_back_in_the_pods_words() -> None:
    shown = to_claude("edit_file", {"path": "a.py", "old_string": "x", "new_string": "y"}, WS)
    assert from_claude("edit_file", shown, WS) == {
        "path": "a.py",
        "old_string": "x",
        "new_string": "y",
    }
    assert from_claude("bash", {"command": "ls", "timeout": 1500}, WS) == {
        "command": "ls",
        "timeout_s": 1.5,
    }
    # A path outside the workspace stays absolute: the file tools' scope refuses it.
    assert from_claude("read_file", {"file_path": "/etc/passwd"}, WS) == {"path": "/etc/passwd"}
    assert from_claude("custom", {"a": 1}, WS) == {"a": 1}
