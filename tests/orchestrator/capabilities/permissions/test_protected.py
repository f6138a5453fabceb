"""Paths whose change runs code later are recognised at any depth and in any case."""

from __future__ import annotations

import pytest

from orchestrator.capabilities.permissions import protected_names, protected_reason


@pytest.mark.parametrize(
    "path",
    [
        ".git/config",
        ".git/hooks/pre-commit",
        ".git",
        "vendor/lib/.git/config",
        ".GIT/config",
        ".envrc",
        "sub/.envrc",
        ".vscode/tasks.json",
        ".pre-commit-config.yaml",
        ".pod/config.yaml",
        ".mcp.json",
    ],
)
def test_a_config_that_runs_commands_is_protected(path: str) -> None:
    assert protected_reason(path) is not None


@pytest.mark.parametrize("path", ["src/git.py", "docs/envrc.md", "a/.gitignore", "README.md", ""])
def test_ordinary_paths_are_not(path: str) -> None:
    assert protected_reason(path) is None


def test_the_pods_own_state_is_protected_as_a_whole() -> None:
    roots = ["/home/u/.local/state/pod"]
    assert protected_reason("/home/u/.local/state/pod/sessions/a.jsonl", roots)
    assert protected_reason("/home/u/.local/state/pod", roots)
    assert protected_reason("/home/u/.local/state/podcast/x", roots) is None


@pytest.mark.parametrize("name", protected_names())
def test_every_published_name_is_protected_inside_a_subdirectory(name: str) -> None:
    assert protected_reason(f"pkg/{name}")
    assert protected_reason(f"pkg/{name.upper()}")
