"""The shared glob translator."""

from __future__ import annotations

import re

import pytest

from orchestrator.core.globs import glob_regex


@pytest.mark.parametrize(
    ("pattern", "path", "braces", "matches"),
    [
        ("*.py", "app.py", False, True),
        ("*.py", "src/app.py", False, False),
        ("**/*.py", "src/deep/app.py", False, True),
        ("src/**", "src/a/b", False, True),
        ("a?c", "abc", False, True),
        ("a?c", "a/c", False, False),
        ("[!a]x", "bx", False, True),
        ("[!a]x", "ax", False, False),
        ("[]]", "]", False, True),
        (r"\*", "*", False, True),
        ("*.{py,md}", "README.md", True, True),
        ("*.{py,md}", "{py,md}", False, False),
        ("*.{py,md}", "x.{py,md}", False, True),
    ],
)
def test_glob_regex(pattern: str, path: str, braces: bool, matches: bool) -> None:
    regex = re.compile(glob_regex(pattern, braces=braces) + r"\Z")
    assert bool(regex.match(path)) is matches


def test_unbalanced_brace_is_an_error() -> None:
    with pytest.raises(ValueError, match="unbalanced"):
        glob_regex("*.{py", braces=True)
