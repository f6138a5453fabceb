"""The picture of the layers is drawn from today's import graph, and follows the contract."""

from __future__ import annotations

import tomllib
from collections import Counter
from pathlib import Path

from cli.layers_diagram import DIAGRAM_FILE, DOC_BLOCK, ROWS, LayerGraph, render_mermaid

ROOT = Path(__file__).resolve().parents[2]
REGENERATE = "the layers diagram is stale; regenerate with: python -m cli.layers_diagram --write"


def test_committed_diagram_matches_a_fresh_render() -> None:
    assert DIAGRAM_FILE.exists(), REGENERATE
    assert DIAGRAM_FILE.read_text(encoding="utf-8") == render_mermaid(), REGENERATE


def test_design_doc_embeds_the_fresh_diagram() -> None:
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    assert DOC_BLOCK.extract(text) == DOC_BLOCK.generated(), REGENERATE


def test_the_rows_are_the_contract_s_layers_in_its_order() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    [layers] = [c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "layers"]
    contract = [
        tuple(name.strip() for name in row.replace("|", ":").split(":")) for row in layers["layers"]
    ]
    drawn = [tuple(name for name in row if name != "conformance") for row in ROWS]
    assert drawn == contract


def _graph(imports: dict[tuple[str, str], int]) -> LayerGraph:
    layers = [layer for row in ROWS for layer in row]
    return LayerGraph(
        packages={layer: [] for layer in layers},
        flat_modules=dict.fromkeys(layers, 1),
        imports=Counter(imports),
    )


def test_an_upward_import_is_drawn_red_and_an_implied_arrow_is_left_out() -> None:
    serving, runtime, core = "orchestrator.serving", "orchestrator.runtime", "orchestrator.core"
    mermaid = render_mermaid(
        _graph({(serving, runtime): 3, (runtime, core): 2, (serving, core): 1, (core, runtime): 2})
    )
    lines = mermaid.splitlines()
    assert "  orchestrator_serving --> orchestrator_runtime" in lines
    assert "  orchestrator_runtime --> orchestrator_core" in lines
    # serving → core goes through runtime already: not drawn.
    assert "  orchestrator_serving --> orchestrator_core" not in lines
    assert '  orchestrator_core -.->|"2 upward imports"| orchestrator_runtime' in lines
    # The third link drawn (numbered from 0) is the upward one, and only it is red.
    assert [line for line in lines if "linkStyle" in line] == [
        "  linkStyle 2 stroke:#d00,color:#d00"
    ]


def test_siblings_that_import_each_other_share_one_two_way_arrow() -> None:
    capabilities, adapters = "orchestrator.capabilities", "orchestrator.adapters"
    mermaid = render_mermaid(_graph({(capabilities, adapters): 4, (adapters, capabilities): 1}))
    assert mermaid.count("<-->") == 1
    assert "-.->" not in mermaid and "linkStyle" not in mermaid
