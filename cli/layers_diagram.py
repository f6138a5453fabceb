"""The picture of the layers, drawn from the import graph (grimp) as a Mermaid flowchart.

Each layer of ``pyproject.toml``'s ``[tool.importlinter]`` layers contract is a box holding its
sub-packages (its flat modules counted in one node). An arrow from one layer to a lower one
says some module of the first imports the second; an arrow implied by two others through a
layer in between is left out, so the picture shows the floors, not every stair. Siblings that
import each other share a two-way arrow. An import that goes up (what the contracts forbid)
is drawn in red and dashed, labelled with how many imports make it, so a violation is seen.
``TYPE_CHECKING`` and function-local imports count, as they do for the contracts.

    python -m cli.layers_diagram            # print the Mermaid source
    python -m cli.layers_diagram --write    # write diagrams/layers.mmd and docs/design.md's block

``tests/diagrams/test_layers_diagram.py`` fails when either is stale.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from states.docblock import DocBlock

__all__ = [
    "DIAGRAM_FILE",
    "DOC_BLOCK",
    "PRODUCT_PACKAGES",
    "ROWS",
    "LayerGraph",
    "layer_graph",
    "main",
    "render_mermaid",
    "write_committed",
]

ROOT: Final = Path(__file__).resolve().parent.parent
DIAGRAM_FILE: Final = ROOT / "diagrams" / "layers.mmd"
DESIGN_DOC: Final = ROOT / "docs" / "design.md"

PRODUCT_PACKAGES: Final = ("states", "orchestrator", "cli", "conformance")
"""The product code: what the import graph, the cycle test and the contracts cover."""

ROWS: Final[tuple[tuple[str, ...], ...]] = (
    ("cli", "conformance"),
    ("orchestrator.serving",),
    ("orchestrator.runtime",),
    ("orchestrator.capabilities", "orchestrator.adapters"),
    ("orchestrator.config", "orchestrator.protocol"),
    ("orchestrator.core",),
    ("orchestrator.errors",),
    ("states",),
)
"""The layers top to bottom, siblings on one row: the contract's order, with the conformance
kit (not in the layers contract: a front-end of its own, which the CLI runs) beside the CLI."""

COMMAND: Final = "python -m cli.layers_diagram"


@dataclass(frozen=True, slots=True)
class LayerGraph:
    """The import graph squashed to layers: what each holds and who imports whom."""

    packages: dict[str, list[str]]
    """Each layer's sub-packages (short names), sorted."""
    flat_modules: dict[str, int]
    """Each layer's modules that are not in a sub-package (its ``__init__`` not counted)."""
    imports: Counter[tuple[str, str]]
    """(importer layer, imported layer) → how many module imports make that edge."""


def _layer_of(module: str, layers: Iterable[str]) -> str | None:
    best = None
    for layer in layers:
        if (module == layer or module.startswith(layer + ".")) and (
            best is None or len(layer) > len(best)
        ):
            best = layer
    return best


def layer_graph() -> LayerGraph:
    """Build the import graph of the product code and squash it to :data:`ROWS`' layers."""
    import grimp  # a dev tool's dependency (import-linter's), not the CLI's

    graph = grimp.build_graph(*PRODUCT_PACKAGES, cache_dir=None)
    layers = [layer for row in ROWS for layer in row]
    packages: dict[str, list[str]] = {layer: [] for layer in layers}
    flat: dict[str, int] = dict.fromkeys(layers, 0)
    for layer in layers:
        if not graph.find_children(layer):  # a module of its own (orchestrator.errors)
            flat[layer] = 1
        for child in sorted(graph.find_children(layer)):
            if graph.find_children(child):
                packages[layer].append(child.rsplit(".", 1)[1])
            else:
                flat[layer] += 1
    imports: Counter[tuple[str, str]] = Counter()
    for module in graph.modules:
        source = _layer_of(module, layers)
        if source is None:
            continue
        for imported in graph.find_modules_directly_imported_by(module):
            target = _layer_of(imported, layers)
            if target is not None and target != source:
                imports[(source, target)] += 1
    return LayerGraph(packages=packages, flat_modules=flat, imports=imports)


def _node(name: str) -> str:
    return name.replace(".", "_")


def _row(layer: str) -> int:
    return next(number for number, row in enumerate(ROWS) if layer in row)


def _reduced(downward: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """The downward edges no path of two or more downward edges already implies."""
    below: dict[str, set[str]] = {}
    for source, target in downward:
        below.setdefault(source, set()).add(target)

    def reachable(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for nxt in below.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    kept = []
    for source, target in sorted(downward):
        implied = any(target in reachable(middle) for middle in below[source] if middle != target)
        if not implied:
            kept.append((source, target))
    return kept


def render_mermaid(graph: LayerGraph | None = None) -> str:
    """The layers as a Mermaid flowchart (see the module)."""
    graph = layer_graph() if graph is None else graph
    lines = ["flowchart TB"]
    for row in ROWS:
        for layer in row:
            lines.append(f'  subgraph {_node(layer)}["{layer}"]')
            lines.append("    direction LR")
            for package in graph.packages[layer]:
                lines.append(f'    {_node(layer)}__{package}["{package}/"]')
            count = graph.flat_modules[layer]
            if count or not graph.packages[layer]:
                what = "module" if count == 1 else "modules"
                more = "+ " if graph.packages[layer] else ""
                lines.append(f'    {_node(layer)}__modules["{more}{count} {what}"]')
            lines.append("  end")
    downward = {(s, t) for (s, t) in graph.imports if _row(s) < _row(t)}
    siblings = sorted(
        (s, t) for (s, t) in graph.imports if _row(s) == _row(t) and (t, s) in graph.imports
    )
    one_way_siblings = sorted(
        (s, t) for (s, t) in graph.imports if _row(s) == _row(t) and (t, s) not in graph.imports
    )
    upward = sorted((s, t) for (s, t) in graph.imports if _row(s) > _row(t))
    for source, target in _reduced(downward) + one_way_siblings:
        lines.append(f"  {_node(source)} --> {_node(target)}")
    for source, target in siblings:
        if source < target:
            lines.append(f"  {_node(source)} <--> {_node(target)}")
    first_upward = len(_reduced(downward)) + len(one_way_siblings)
    first_upward += sum(1 for s, t in siblings if s < t)
    for source, target in upward:
        count = graph.imports[(source, target)]
        label = f"{count} upward import{'s' if count != 1 else ''}"
        lines.append(f'  {_node(source)} -.->|"{label}"| {_node(target)}')
    for number in range(first_upward, first_upward + len(upward)):
        lines.append(f"  linkStyle {number} stroke:#d00,color:#d00")
    return "\n".join(lines) + "\n"


def _doc_body() -> str:
    return f"```mermaid\n{render_mermaid()}```\n"


DOC_BLOCK: Final = DocBlock(
    start="<!-- layers-diagram:start -->",
    end="<!-- layers-diagram:end -->",
    render=_doc_body,
    command=COMMAND,
    what="layers diagram",
    doc="docs/design.md",
)
"""The picture as docs/design.md embeds it."""


def write_committed() -> list[Path]:
    """Write diagrams/layers.mmd and refresh docs/design.md's block; the paths written."""
    mermaid = render_mermaid()
    DIAGRAM_FILE.parent.mkdir(parents=True, exist_ok=True)
    DIAGRAM_FILE.write_text(mermaid, encoding="utf-8")
    text = DESIGN_DOC.read_text(encoding="utf-8")
    DESIGN_DOC.write_text(DOC_BLOCK.refresh(text), encoding="utf-8")
    return [DIAGRAM_FILE, DESIGN_DOC]


def main(argv: Sequence[str] | None = None) -> int:
    """Print the Mermaid source, ``--write`` the committed copies, or refresh / check one
    document's block (``--write-docs FILE``, ``--check-docs FILE``, as the other generated
    blocks take)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if any(arg.startswith(("--write-docs", "--check-docs")) for arg in args):
        return DOC_BLOCK.main(args, description=__doc__, printed="")
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__)
    parser.add_argument("--write", action="store_true", help="write the committed copies")
    parsed = parser.parse_args(args)
    if parsed.write:
        for path in write_committed():
            print(f"wrote {path.relative_to(ROOT)}")
        return 0
    sys.stdout.write(render_mermaid())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
