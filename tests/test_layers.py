"""The rules of docs/design.md ("The rules"), checked over the product code's import graph.

The graph is grimp's (what import-linter reads): imports under ``TYPE_CHECKING`` and inside
functions count, since a module that names another at all depends on it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path

import grimp

from cli.layers_diagram import PRODUCT_PACKAGES

ROOT = Path(__file__).resolve().parents[1]
MAX_MODULE_LINES = 500
"""The hard limit on a product module's length (the aim is 400)."""


def _import_graph() -> dict[str, set[str]]:
    graph = grimp.build_graph(*PRODUCT_PACKAGES, cache_dir=None)
    return {
        module: set(graph.find_modules_directly_imported_by(module)) for module in graph.modules
    }


def strongly_connected(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative: the graph is deep), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def shortest_cycle(graph: Mapping[str, Iterable[str]], members: Iterable[str]) -> list[str]:
    """The shortest cycle through the first of ``members`` inside them, start repeated."""
    inside = set(members)
    start = min(inside)
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in sorted(graph.get(node, ())):
                if nxt not in inside:
                    continue
                if nxt == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [*reversed(path), start]
                if nxt not in parents:
                    parents[nxt] = node
                    following.append(nxt)
        frontier = following
    return []


def import_cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """One shortest cycle per tangle of modules that import each other, round or direct."""
    cycles = []
    for component in strongly_connected(graph):
        if len(component) > 1 or component[0] in graph.get(component[0], ()):
            cycles.append(shortest_cycle(graph, component))
    return cycles


def test_the_cycle_finder_names_a_cycle_and_passes_a_tree() -> None:
    tree = {"a": {"b", "c"}, "b": {"c"}, "c": set()}
    assert import_cycles(tree) == []
    tangled = {"a": {"b"}, "b": {"c", "d"}, "c": {"a"}, "d": {"d"}, "e": {"a"}}
    assert sorted(import_cycles(tangled)) == [["a", "b", "c", "a"], ["d", "d"]]


def test_no_import_cycle_in_product_code() -> None:
    graph = _import_graph()
    tangles = [c for c in strongly_connected(graph) if len(c) > 1 or c[0] in graph[c[0]]]
    shown = "\n".join(
        f"{len(tangle)} modules ({', '.join(tangle)}); shortest cycle: "
        + " -> ".join(shortest_cycle(graph, tangle))
        for tangle in tangles
    )
    assert tangles == [], f"{len(tangles)} import cycle(s) in product code:\n{shown}"


def test_no_product_module_is_over_the_limit() -> None:
    over = []
    for package in PRODUCT_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines > MAX_MODULE_LINES:
                over.append(f"{path.relative_to(ROOT)}: {lines}")
    assert over == [], f"modules over {MAX_MODULE_LINES} lines:\n" + "\n".join(over)


def test_the_contracts_are_declared() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    linter = config["tool"]["importlinter"]
    assert set(linter["root_packages"]) == set(PRODUCT_PACKAGES)
    contracts = {contract["id"]: contract for contract in linter["contracts"]}
    assert contracts["layers"]["type"] == "layers"
    assert contracts["layers"]["layers"][0] == "cli"
    assert contracts["core-is-pure"]["source_modules"] == ["orchestrator.core"]
    assert "cli" in contracts["no-cli-below"]["forbidden_modules"]
    assert contracts["states-stand-alone"]["forbidden_modules"] == [
        "orchestrator",
        "cli",
        "conformance",
    ]
    # TYPE_CHECKING imports count: nobody turned import-linter's default off.
    assert all(not c.get("exclude_type_checking_imports") for c in contracts.values())


def test_lint_imports_keeps_every_contract() -> None:
    command = Path(sys.executable).with_name("lint-imports")
    found = str(command) if command.exists() else shutil.which("lint-imports")
    assert found is not None, "lint-imports is missing: install the dev extra"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [found, "--no-cache"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


SHELL_MODULES = frozenset(
    {"asyncio", "os", "shutil", "signal", "socket", "subprocess", "tempfile", "threading", "time"}
)
"""What core never imports: processes, files, sockets, threads, the event loop, clocks."""


def test_core_does_no_io() -> None:
    graph = grimp.build_graph("orchestrator", include_external_packages=True, cache_dir=None)
    found = sorted(
        f"{module} imports {imported}"
        for module in graph.find_children("orchestrator.core") | {"orchestrator.core"}
        for imported in graph.find_modules_directly_imported_by(module)
        if imported.split(".")[0] in SHELL_MODULES
    )
    assert found == [], "core is pure, but:\n" + "\n".join(found)
