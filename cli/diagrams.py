"""Diagrams of the pod lifecycle, rendered from the machine class by python-statemachine.

Text formats (``mermaid``, ``dot``, ``md``) need nothing but Python; ``svg`` and ``png`` run
Graphviz's ``dot`` program. ``python -m cli.diagrams --write`` regenerates the files in
``diagrams/`` that ``tests/diagrams/test_drift.py`` compares against a fresh render.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final, Literal, get_args

from statemachine.contrib.diagram import GraphvizError, GraphvizNotFoundError, formatter
from statemachine.contrib.diagram.graphviz import run_graphviz

from orchestrator.errors import SetupError
from states.lifecycle import PodLifecycle

DiagramFormat = Literal["mermaid", "dot", "svg", "png", "md"]
DIAGRAM_FORMATS: Final[tuple[str, ...]] = get_args(DiagramFormat)
BINARY_FORMATS: Final = frozenset({"png"})
"""Formats whose output is bytes; everything else is text."""

DIAGRAMS_DIR: Final = Path(__file__).resolve().parent.parent / "diagrams"
COMMITTED_FILES: Final[dict[DiagramFormat, str]] = {
    "mermaid": "pod-lifecycle.mmd",
    "dot": "pod-lifecycle.dot",
    "svg": "pod-lifecycle.svg",
}
"""The diagram files kept in ``diagrams/``, by format."""

MISSING_DOT_MESSAGE: Final = (
    "Graphviz's `dot` program is not installed (it is needed for svg and png). "
    "Install it with `apt-get install graphviz` (Debian/Ubuntu) or `brew install graphviz` "
    "(macOS). The mermaid, dot and md formats work without it."
)


class DiagramError(SetupError):
    """A diagram could not be rendered; the message says what to do."""


# The dot renderer names anonymous nodes after Python object ids, which change every run;
# numbering them in order of appearance keeps the committed .dot file stable.
_OBJECT_ID = re.compile(r"(__initial_|cluster___atomic_)(\d+)")


def _stable_ids(dot_source: str) -> str:
    numbers: dict[str, int] = {}

    def renumber(match: re.Match[str]) -> str:
        number = numbers.setdefault(match.group(2), len(numbers))
        return f"{match.group(1)}{number}"

    return _OBJECT_ID.sub(renumber, dot_source)


_EDGE = re.compile(r"^(?P<ends>\S+ -> \S+) \[label=<(?P<label><table .*</table>)>(?P<rest>.*)\];$")
_ROW = re.compile(r"<tr>.*?</tr>")
_SPACER = '<tr><td cellpadding="1"></td></tr>'


def merge_parallel_edges(dot: str) -> str:
    """One edge per pair of states, its label the labels of every transition between them.

    Graphviz draws the labels of parallel edges (above all those leaving a compound state,
    clipped to its border) on top of each other; one edge with one stacked label cannot
    overlap itself.
    """
    lines = dot.splitlines()
    merged: dict[tuple[str, str], list[str]] = {}
    first: dict[tuple[str, str], int] = {}
    for number, line in enumerate(lines):
        edge = _EDGE.match(line)
        if edge is None:
            continue
        key = (edge["ends"], edge["rest"])
        rows = [row for row in _ROW.findall(edge["label"]) if row != _SPACER]
        merged.setdefault(key, []).extend(rows)
        first.setdefault(key, number)
    out: list[str] = []
    for number, line in enumerate(lines):
        edge = _EDGE.match(line)
        if edge is None:
            out.append(line)
            continue
        key = (edge["ends"], edge["rest"])
        if first[key] != number:
            continue  # drawn with the first edge of its pair
        table = re.match(r"<table[^>]*>", edge["label"])
        opening = table.group(0) if table else "<table>"
        label = opening + "".join(merged[key]) + _SPACER + "</table>"
        out.append(f"{edge['ends']} [label=<{label}>{edge['rest']}];")
    return "\n".join(out) + ("\n" if dot.endswith("\n") else "")


def dot_source() -> str:
    """The lifecycle in the DOT language, with stable node names and one labelled edge per
    pair of states."""
    return merge_parallel_edges(_stable_ids(formatter.render(PodLifecycle, "dot")))


def render_diagram(fmt: DiagramFormat) -> str | bytes:
    """The lifecycle diagram in ``fmt``: text for mermaid/dot/md/svg, bytes for png."""
    if fmt == "dot":
        return dot_source()
    if fmt in ("mermaid", "md"):
        return formatter.render(PodLifecycle, fmt)
    if fmt not in ("svg", "png"):
        raise DiagramError(
            f"unknown diagram format {fmt!r}; use one of {', '.join(DIAGRAM_FORMATS)}"
        )
    try:
        image = run_graphviz(dot_source(), fmt)
    except GraphvizNotFoundError as exc:
        raise DiagramError(MISSING_DOT_MESSAGE) from exc
    except GraphvizError as exc:  # dot ran and failed; its stderr is the message
        raise DiagramError(f"Graphviz failed to render {fmt}: {exc}") from exc
    return image if fmt in BINARY_FORMATS else image.decode("utf-8")


def write_committed(directory: Path = DIAGRAMS_DIR) -> list[Path]:
    """Regenerate the committed diagram files; returns the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for fmt, name in COMMITTED_FILES.items():
        content = render_diagram(fmt)
        path = directory / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """Regenerate ``diagrams/`` (``--write``) or print one format."""
    parser = argparse.ArgumentParser(prog="python -m cli.diagrams")
    parser.add_argument("--write", action="store_true", help="regenerate diagrams/*")
    parser.add_argument("--format", choices=DIAGRAM_FORMATS, default="mermaid")
    args = parser.parse_args(argv)
    if args.write:
        for path in write_committed():
            print(f"wrote {path}")
        return 0
    content = render_diagram(args.format)
    if isinstance(content, bytes):
        sys.stdout.buffer.write(content)
    else:
        print(content, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
