"""Which paths a sandbox hides for the sockets a pod, its host or its fleet serve: each as it
is, or around the workspace where a folder holds it (real folders)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.config import PodConfig
from orchestrator.paths import pod_info_path
from orchestrator.pod import served_sockets
from orchestrator.sandbox import served
from orchestrator.sandbox.sandboxing import sandbox_spec
from orchestrator.sandbox.served import hidden_around


def test_a_socket_anywhere_is_hidden_as_it_is(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    inside, elsewhere = workspace / "pod.sock", tmp_path / "run" / "host.sock"
    assert hidden_around([inside, elsewhere], workspace) == (inside, elsewhere)


def test_a_folder_holding_the_workspace_is_hidden_around_it(tmp_path: Path) -> None:
    root = tmp_path / "fleet"
    workspace = root / "projects" / "a"
    for folder in (root / "gw-node", root / "sessions", workspace, root / "projects" / "b"):
        folder.mkdir(parents=True)
    (root / "settings.json").write_text("{}")
    assert set(hidden_around([root], workspace)) == {
        root / "gw-node",
        root / "sessions",
        root / "settings.json",
        root / "projects" / "b",
    }
    assert hidden_around([workspace], workspace) == ()  # never the workspace itself


def test_what_a_hidden_folder_holds_is_not_hidden_again(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    run = tmp_path / "run"
    sockets = [run / f"p{n}.sock" for n in range(3)]
    assert hidden_around([*sockets, run, run / "host.sock"], workspace) == (run,)


def test_entries_beside_the_workspace_are_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(served, "MAX_ENTRIES", 3)
    workspace = tmp_path / "root" / "w"
    workspace.mkdir(parents=True)
    for n in range(5):
        (tmp_path / "root" / f"x{n}").mkdir()
    assert len(hidden_around([tmp_path / "root"], workspace)) == 3


def test_the_spec_hides_the_extra_paths(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    config = PodConfig(workspace=workspace, name="t", provider="scripted")
    extra = (workspace / "pod.sock", tmp_path / "fleet" / "gw-x")
    spec = sandbox_spec(config, extra_hidden=extra)
    assert set(extra) <= set(spec.hidden)
    assert set(sandbox_spec(config).hidden) == set(spec.hidden) - set(extra)


def test_a_pod_hides_its_socket_its_info_file_and_its_parent_s_socket(tmp_path: Path) -> None:
    socket, parent = tmp_path / "ws" / "pod.sock", tmp_path / "parent.sock"
    # No host in this process: only the pod's own.
    assert served_sockets(socket, parent=parent) == (socket, pod_info_path(socket), parent)
    assert served_sockets(socket) == (socket, pod_info_path(socket))
