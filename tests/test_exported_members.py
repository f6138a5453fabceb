"""Every package's ``__all__`` is sorted, resolvable, and the layering holds."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["states", "orchestrator", "orchestrator.providers", "orchestrator.tools"]


def _isort_key(name: str) -> tuple[int, str]:
    # ruff's RUF022 order: CONSTANTS, then Classes, then functions.
    kind = 0 if name.isupper() else 1 if name[0].isupper() else 2
    return kind, name


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_sorted_and_resolves(name: str) -> None:
    package = importlib.import_module(name)
    exported = list(package.__all__)
    assert exported == sorted(exported, key=_isort_key)
    for member in exported:
        assert getattr(package, member) is not None, member


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_dependencies_point_one_way() -> None:
    for path in (ROOT / "states").rglob("*.py"):
        assert not _imports(path) & {"orchestrator", "cli"}, f"{path} imports upward"
    for path in (ROOT / "orchestrator").rglob("*.py"):
        assert "cli" not in _imports(path), f"{path} imports the CLI"
