"""No test fails because the machine is busy: the suite's own rules, checked."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import settings

TESTS = Path(__file__).parent


def test_hypothesis_has_no_deadline() -> None:
    assert settings().deadline is None


def test_no_property_test_sets_a_deadline_of_its_own() -> None:
    found = [
        f"{path.relative_to(TESTS)}: {line.strip()}"
        for path in TESTS.rglob("*.py")
        if path.name != Path(__file__).name
        for line in path.read_text().splitlines()
        if re.search(r"deadline\s*=\s*(?!None)[\w.(]", line) and "settings" in line
    ]
    assert not found, found
