"""``POD_SANDBOX_HIDE``: folders a process's pods hide from their sandboxed programs (a fleet
host's root), on top of the user's secrets and the pod's own state."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrator.config import PodConfig
from orchestrator.sandbox.sandboxing import HIDE_ENV, sandbox_spec


def test_the_folders_it_names_are_hidden_and_the_workspace_under_one_still_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, other = tmp_path / "fleet", tmp_path / "other"
    workspace = root / "ws"
    workspace.mkdir(parents=True)
    config = PodConfig(workspace=workspace)
    monkeypatch.delenv(HIDE_ENV, raising=False)
    assert root not in sandbox_spec(config).hidden
    monkeypatch.setenv(HIDE_ENV, f"{root}{os.pathsep}{os.pathsep}{other}")
    spec = sandbox_spec(config)
    assert spec.hidden[-2:] == (root, other)  # an empty entry names nothing
    assert spec.workspace == workspace.resolve()  # bound after the hidden ones
