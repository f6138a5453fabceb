"""The committed diagrams are exactly what the machine class renders today."""

from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET

import pytest
from statemachine.contrib.diagram import formatter

from cli.diagrams import COMMITTED_FILES, DIAGRAMS_DIR, render_diagram
from states.lifecycle import PodLifecycle

REGENERATE = "diagrams/ is stale; regenerate with: python -m cli.diagrams --write"


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


def test_every_pair_of_states_has_one_edge_carrying_every_transition_label() -> None:
    """Parallel edges drew their labels on top of each other; one edge per pair cannot."""
    raw = formatter.render(PodLifecycle, "dot")
    merged = render_diagram("dot")
    assert isinstance(merged, str)
    edges = re.findall(r"^(\S+ -> \S+) \[label=<", merged, flags=re.MULTILINE)
    assert len(edges) == len(set(edges))
    assert len(set(edges)) < len(re.findall(r"^\S+ -> \S+ \[label=<", raw, flags=re.MULTILINE))
    label_texts = sorted(re.findall(r'<font point-size="9">([^<]*)</font>', raw))
    assert sorted(re.findall(r'<font point-size="9">([^<]*)</font>', merged)) == label_texts
    # Stopping's many ways to Stopped are one edge, its label listing them all.
    [stopping] = [line for line in merged.splitlines() if line.startswith("stopping -> stopped")]
    assert all(t in stopping for t in ("Turn finished", "Rewind failed", "Compaction done"))
