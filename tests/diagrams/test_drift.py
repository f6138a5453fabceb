"""The committed diagrams are exactly what the machine class renders today."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET

import pytest

from orchestrator.diagram import COMMITTED_FILES, DIAGRAMS_DIR, render_diagram
from states.lifecycle import PodLifecycle

REGENERATE = "diagrams/ is stale; regenerate with: python -m orchestrator.diagram --write"


@pytest.mark.parametrize("fmt", ["mermaid", "dot"])
def test_committed_text_diagram_matches_a_fresh_render(fmt: str) -> None:
    path = DIAGRAMS_DIR / COMMITTED_FILES[fmt]  # type: ignore[index]
    assert path.exists(), REGENERATE
    fresh = render_diagram(fmt)  # type: ignore[arg-type]
    assert path.read_text(encoding="utf-8") == fresh, REGENERATE


def test_dot_render_is_stable_across_calls() -> None:
    # The renderer names anonymous nodes after object ids; diagram.py renumbers them.
    assert render_diagram("dot") == render_diagram("dot")


def test_committed_svg_parses_and_names_every_state() -> None:
    path = DIAGRAMS_DIR / COMMITTED_FILES["svg"]
    assert path.exists(), REGENERATE
    svg = path.read_text(encoding="utf-8")
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg")
    text = " ".join(t for t in root.itertext())
    for state in PodLifecycle.states_map.values():
        assert state.name in text, f"{state.name} missing from the svg; {REGENERATE}"


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_fresh_svg_names_every_state() -> None:
    svg = render_diagram("svg")
    assert isinstance(svg, str)
    root = ET.fromstring(svg)
    text = " ".join(root.itertext())
    assert all(s.name in text for s in PodLifecycle.states_map.values())
