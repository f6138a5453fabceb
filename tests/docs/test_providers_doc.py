"""docs/providers.md's capability table is the code's (orchestrator/adapters/providers/
platform_models.py), row by row, and names the date the code's table was checked."""

from __future__ import annotations

import re
from pathlib import Path

from orchestrator.adapters.providers.platform_models import PLATFORM_MODELS, TABLE_DATE

DOC = Path(__file__).resolve().parents[2] / "docs" / "providers.md"


def _doc_rows() -> dict[str, list[str]]:
    text = DOC.read_text(encoding="utf-8")
    table = text.split("| Family | Window (tokens) |", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in table.splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = cells[1:]
    return rows


def test_the_capability_table_is_the_codes() -> None:
    rows = _doc_rows()
    assert set(rows) == set(PLATFORM_MODELS)
    for family, model in PLATFORM_MODELS.items():
        window, thinking, effort, server_tools = rows[family]
        assert int(window.replace(",", "")) == model.window, family
        kinds = [
            name for name, on in (("adaptive", model.adaptive), ("budget", model.enabled)) if on
        ]
        assert thinking == (", ".join(kinds) or "none"), family
        levels = [level for level in ("low", "medium", "high", "max") if level in model.efforts]
        assert effort == (", ".join(levels) or "none"), family
        assert server_tools == "none", family


def test_the_doc_dates_its_sources_as_the_code_does() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert re.search(rf"as read on {re.escape(TABLE_DATE)}", text)
