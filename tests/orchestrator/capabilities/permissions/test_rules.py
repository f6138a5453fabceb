"""One rule and what it matches: tools and kinds, paths like .gitignore, commands by name."""

from __future__ import annotations

import pytest

from orchestrator.capabilities.permissions import Rule, SimpleCommand, lexical_path


@pytest.mark.parametrize(
    ("rule", "tool", "kind", "covers"),
    [
        ("read", "read_file", "read", True),
        ("Read", "grep", "read", True),
        ("read", "write_file", "edit", False),
        ("edit", "write_file", "edit", True),
        ("write", "edit_file", "edit", True),
        ("edit", "bash", "execute", False),
        ("mcp__git__*", "mcp__git__status", "other", True),
        ("bash", "bash_output", "read", False),
    ],
)
def test_a_rule_names_a_tool_by_glob_or_a_kind_by_alias(
    rule: str, tool: str, kind: str, covers: bool
) -> None:
    assert Rule.parse(rule).covers_tool(tool, kind) is covers


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        (".env", ".env", True),
        (".env", "app/.env", True),  # no slash: any depth, as in .gitignore
        ("./.env", ".env", True),
        ("secrets", "secrets/key", True),  # a directory covers its tree
        ("secrets/", "secrets/deep/key", True),
        ("./secrets/**", "secrets/key", True),
        ("docs/*", "docs/a.md", True),
        ("docs/*", "src/a.md", False),
        ("docs/**", "docs/../.git/hooks/pre-commit", False),  # paths arrive canonical
        ("*.pem", "keys/server.pem", True),
        ("//etc/passwd", "/etc/passwd", True),
        ("/etc/**", "/etc/ssh/sshd_config", True),
        (".env", ".env.example", False),
    ],
)
def test_path_patterns_match_like_gitignore(pattern: str, path: str, matches: bool) -> None:
    assert Rule("read", pattern).matches_path(lexical_path(path)) is matches


@pytest.mark.parametrize(
    ("pattern", "argv", "matches"),
    [
        ("rm *", ("rm", "-f", "x"), True),
        ("rm *", ("rmdir", "x"), False),
        ("/usr/bin/rm *", ("rm", "x"), True),
        ("git push:*", ("git", "push"), True),
        ("git push:*", ("git", "push", "origin"), True),
        ("git push:*", ("git", "pushy"), False),
        ("git  status*", ("git", "status", "-s"), True),
    ],
)
def test_command_patterns_match_each_simple_command(
    pattern: str, argv: tuple[str, ...], matches: bool
) -> None:
    assert Rule("bash", pattern).matches_command(SimpleCommand(argv)) is matches


def test_an_exact_rule_matches_only_its_own_text() -> None:
    rule = Rule("bash", "rm -f *.pyc", exact=True)
    assert rule.matches_text("rm -f *.pyc")
    assert not rule.matches_text("rm -f a.pyc")


@pytest.mark.parametrize(
    ("path", "expected"), [("./a/../b", "b"), (".", ""), ("", ""), ("a//b/", "a/b")]
)
def test_lexical_paths_are_normalised_on_their_text(path: str, expected: str) -> None:
    assert lexical_path(path) == expected
