"""docs/permissions.md names every protected path and every wrapper the parser sees through."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.capabilities.permissions import protected_names
from orchestrator.capabilities.permissions.shell import WRAPPERS

DOC = (Path(__file__).parents[2] / "docs" / "permissions.md").read_text()


@pytest.mark.parametrize("name", protected_names())
def test_every_protected_path_is_listed(name: str) -> None:
    assert f"`{name}/`" in DOC or f"`{name}`" in DOC


@pytest.mark.parametrize("wrapper", sorted(WRAPPERS))
def test_every_wrapper_is_listed(wrapper: str) -> None:
    assert f"`{wrapper}" in DOC
