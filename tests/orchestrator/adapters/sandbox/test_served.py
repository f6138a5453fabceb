"""Which paths a sandbox hides for the sockets a pod, its host or its fleet serve: each as it
is, and a folder holding the workspace as a whole, with the workspace bound again inside it
(the mount plan's "most specific path wins"; real folders outside /tmp)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.adapters.sandbox.mounts import Mount, mount_plan
from orchestrator.adapters.sandbox.sandboxing import sandbox_spec
from orchestrator.config.model import PodConfig
from orchestrator.config.paths import pod_info_path
from orchestrator.serving.pod import served_sockets


@pytest.fixture
def base() -> Iterator[Path]:
    """A folder outside /tmp and $HOME, which the sandbox hides as a whole."""
    folder = Path(tempfile.mkdtemp(prefix="pods", dir="/var/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _plan(workspace: Path, extra: list[Path]) -> list[Mount]:
    config = PodConfig(workspace=workspace, name="t", provider="scripted")
    return list(mount_plan(sandbox_spec(config, extra_hidden=extra)))


def test_a_socket_anywhere_is_hidden_as_it_is(base: Path) -> None:
    workspace = base / "ws"
    workspace.mkdir()
    inside, elsewhere = workspace / "pod.sock", base / "run" / "host.sock"
    spec = sandbox_spec(PodConfig(workspace=workspace, name="t"), extra_hidden=[inside, elsewhere])
    assert spec.hidden[-2:] == (inside, elsewhere)


def test_a_folder_holding_the_workspace_is_hidden_and_the_workspace_bound_again(
    base: Path,
) -> None:
    root = base / "fleet"
    workspace = root / "projects" / "a"
    for folder in (root / "gw-node", root / "sessions", workspace, root / "projects" / "b"):
        folder.mkdir(parents=True)
    (root / "settings.json").write_text("{}")
    mounts = _plan(workspace, [root])
    # The root hidden first, the workspace made writable inside it after: nothing beside it.
    assert mounts.index(Mount(root, "hide")) < mounts.index(Mount(workspace, "write"))
    assert not [m for m in mounts if m.path.is_relative_to(root / "gw-node")]
    # Never the workspace itself.
    assert Mount(workspace, "hide") not in _plan(workspace, [workspace])
    assert Mount(workspace, "write") in _plan(workspace, [workspace])


def test_what_a_hidden_folder_holds_is_not_hidden_again(base: Path) -> None:
    workspace = base / "ws"
    workspace.mkdir()
    run = base / "run"
    run.mkdir()
    sockets = [run / f"p{n}.sock" for n in range(3)]
    for socket in sockets:
        socket.write_text("")
    hides = [m.path for m in _plan(workspace, [*sockets, run]) if m.kind == "hide"]
    assert run in hides
    assert not [p for p in hides if p.is_relative_to(run) and p != run]


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
