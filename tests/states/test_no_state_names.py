"""No product code outside ``states/`` compares a state's name: it asks :mod:`states.queries`.

The scan reads every product module (``orchestrator``, ``cli``, ``conformance``) and fails
on each comparison (``==``, ``!=``, ``in``, ``not in``) of a machine state's name
written as a string literal, alone or in a tuple, list or set, naming the file and line.

Some state names are words of other vocabularies too: ``idle``, ``paused`` and ``stopped``
are also the public ``status`` every client reads (a protocol field, not the machine's
state), and ``interrupted`` or ``stopping`` name hook outcomes and host replies. Those words are
flagged only where the other side of the comparison is a state (a name, attribute, key or
``.get`` argument that says ``state``); every other state name is flagged wherever it is
compared.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from states.lifecycle import PodLifecycle

REPO = Path(__file__).resolve().parents[2]
PRODUCT = ("orchestrator", "cli", "conformance")

STATE_NAMES = frozenset(state.id for state in PodLifecycle.states_map.values() if not state.states)
"""The leaf states: what ``state_id`` and ``status.state`` hold (``running`` is the compound
around the turn's states, and a public status)."""
SHARED_WORDS = frozenset({"idle", "paused", "stopped", "interrupted", "stopping"})
"""State names that are also public statuses, hook outcomes or host replies."""

OWNED_ELSEWHERE = frozenset({"orchestrator/runtime/controller.py"})
"""The controller's own comparisons are another change's to remove (it becomes a package and
asks the machine's outcomes); the scan covers it once that lands and this entry goes."""


def _literals(node: ast.expr) -> Iterator[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.Tuple | ast.List | ast.Set):
        for element in node.elts:
            yield from _literals(element)
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("frozenset", "set", "tuple")
    ):
        for arg in node.args:
            yield from _literals(arg)


def _names_a_state(node: ast.expr) -> bool:
    """Whether an expression reads a state: ``state``, ``x.state_id``, ``d["state"]``,
    ``d.get("state")``, ``row.target_state``."""
    words: list[str] = []
    for part in ast.walk(node):
        if isinstance(part, ast.Name):
            words.append(part.id)
        elif isinstance(part, ast.Attribute):
            words.append(part.attr)
        elif isinstance(part, ast.Constant) and isinstance(part.value, str):
            words.append(part.value)
    return any("state" in word.lower() for word in words)


def state_comparisons(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """``(line, name)`` for every comparison of a state name in ``tree``."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        for index, side in enumerate(sides):
            others = sides[:index] + sides[index + 1 :]
            for value in _literals(side):
                if value not in STATE_NAMES:
                    continue
                if value in SHARED_WORDS and not any(_names_a_state(o) for o in others):
                    continue
                yield node.lineno, value


def _product_files() -> Iterator[Path]:
    for top in PRODUCT:
        yield from sorted((REPO / top).rglob("*.py"))


def test_the_scan_finds_what_it_must() -> None:
    found = list(
        state_comparisons(
            ast.parse(
                "a = c.state_id == 'awaiting_approval'\n"
                "b = state in ('idle', 'paused')\n"
                "c = data.get('state') != 'stopped'\n"
                "d = status == 'paused'\n"  # the public status: allowed
                "e = hold == 'compacting'\n"
                "f = x in frozenset({'rewinding'})\n"
            )
        )
    )
    assert found == [
        (1, "awaiting_approval"),
        (2, "idle"),
        (2, "paused"),
        (3, "stopped"),
        (5, "compacting"),
        (6, "rewinding"),
    ]


def test_no_state_name_is_compared_outside_states() -> None:
    offences = []
    for path in _product_files():
        relative = path.relative_to(REPO).as_posix()
        if relative in OWNED_ELSEWHERE:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=relative)
        offences += [
            f"{relative}:{line}: compares the state name {name!r} (ask states.queries)"
            for line, name in state_comparisons(tree)
        ]
    assert not offences, "\n".join(offences)
