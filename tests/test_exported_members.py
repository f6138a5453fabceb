"""Every package's ``__all__`` is sorted, resolvable, and the layering holds.

Layers: ``states`` ← ``orchestrator`` ← ``conformance`` ← ``cli``. The runtime (``states``,
``orchestrator``) never imports the conformance kit; the CLI loads it only inside ``pod
conformance``.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = [
    "states",
    "orchestrator",
    "orchestrator.adapters.providers",
    "orchestrator.capabilities.tools",
]


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


def _absolute(path: Path, node: ast.ImportFrom) -> str:
    """The absolute module an ``ImportFrom`` names, relative imports resolved from ``path``."""
    if node.level == 0:
        return node.module or ""
    package = path.relative_to(ROOT).parent.parts
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _imports(path: Path, *, module_level_only: bool = False) -> set[str]:
    """Top-level packages ``path`` imports (only outside functions, if asked)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    nodes: list[ast.AST] = [tree]
    while nodes:
        node = nodes.pop()
        if module_level_only and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.add(_absolute(path, node).split(".")[0])
        nodes.extend(ast.iter_child_nodes(node))
    return found


def _sources(package: str) -> list[Path]:
    paths = sorted((ROOT / package).rglob("*.py"))
    assert paths, f"no sources under {package}/"
    return paths


def test_dependencies_point_one_way() -> None:
    for path in _sources("states"):
        assert not _imports(path) & {"orchestrator", "conformance", "cli"}, f"{path} imports upward"
    for path in _sources("orchestrator"):
        assert not _imports(path) & {"conformance", "cli"}, f"{path} imports upward"
    for path in _sources("conformance"):
        assert "cli" not in _imports(path), f"{path} imports the CLI"


def test_the_cli_imports_the_conformance_kit_only_when_it_runs() -> None:
    # `pod --help` and the other light commands must not pay for loading the kit.
    users = [p for p in _sources("cli") if "conformance" in _imports(p)]
    assert users, "no CLI module uses the kit; is the import check still looking?"
    for path in users:
        assert "conformance" not in _imports(path, module_level_only=True), path


def test_relative_imports_are_resolved_for_the_layering_check() -> None:
    source = ROOT / "orchestrator" / "adapters" / "providers" / "_probe.py"
    tree = ast.parse("from ....conformance import fake_api\nfrom .base import X\n")
    up, same = (n for n in tree.body if isinstance(n, ast.ImportFrom))
    assert _absolute(source, up) == "conformance"
    assert _absolute(source, same) == "orchestrator.adapters.providers.base"
