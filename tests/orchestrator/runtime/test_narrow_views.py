"""``status`` and ``unload`` read the pod through small Protocols, never the controller.

The controller builds a status board and a host unloads a controller: if either module
imported it back (``TYPE_CHECKING`` included), the two would form an import circle again.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
CONTROLLER = "orchestrator.runtime.controller"


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


@pytest.mark.parametrize(
    "module",
    [
        "orchestrator/runtime/status.py",
        "orchestrator/runtime/status_source.py",
        "orchestrator/runtime/unload.py",
    ],
)
def test_the_module_does_not_import_the_controller(module: str) -> None:
    imported = _imports(REPO / module)
    assert not {n for n in imported if n == CONTROLLER or n.startswith(CONTROLLER + ".")}
    assert "orchestrator.runtime.Controller" not in imported
