"""The sandbox's mount plan: the most specific path wins, and a mount that changes nothing
is left out (on real folders: the plan looks at what exists)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.adapters.sandbox.bwrap import SandboxSpec
from orchestrator.adapters.sandbox.mounts import Mount, mount_plan, plan


@pytest.fixture
def base() -> Iterator[Path]:
    """A folder outside /tmp, which the sandbox hides as a whole."""
    folder = Path(tempfile.mkdtemp(prefix="podm", dir="/var/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _kinds(mounts: tuple[Mount, ...], base: Path) -> list[tuple[str, str]]:
    return [(str(m.path.relative_to(base)), m.kind) for m in mounts]


def test_a_workspace_containing_home_has_the_secrets_hidden_after_it(base: Path) -> None:
    home = base / "home"
    for folder in (home / ".ssh", home / ".cargo" / "bin", home / ".git", base / "state"):
        folder.mkdir(parents=True)
    (home / ".bash_history").write_text("x\n")
    spec = SandboxSpec(
        workspace=home,
        home=home,
        home_readable=(home / ".cargo" / "bin", home / "missing"),
        hidden=(home / ".ssh", home / ".bash_history", base / "state", base / "absent"),
        read_only=(home / ".git",),
        installation=(),
    )
    mounts = mount_plan(spec)
    assert _kinds(mounts, base) == [
        ("home", "private"),
        ("home", "write"),
        ("state", "hide"),
        ("home/.cargo", "pin"),  # holds a read-only path: bound over itself, not renamed
        ("home/.git", "read_only"),
        ("home/.bash_history", "hide"),
        ("home/.ssh", "hide"),
        ("home/.cargo/bin", "fixed"),  # a toolchain's programs stay read-only in a workspace
    ]
    assert [m.is_dir for m in mounts if m.kind == "hide"] == [True, False, True]


def test_the_most_specific_path_wins_and_what_changes_nothing_is_left_out(base: Path) -> None:
    home, ws = base / "home", base / "home" / "ws"
    for folder in (ws / "secret" / ".git", home / ".config" / "pod" / "hooks", home / ".tool",
                   ws / "a" / "b" / "c"):  # fmt: skip
        folder.mkdir(parents=True)
    mounts = plan(
        [
            Mount(home, "private"),
            Mount(home / ".tool", "show"),
            Mount(home / ".config" / "pod", "hide"),  # already hidden by the private $HOME
            Mount(home / ".config" / "pod" / "hooks", "show"),  # named there: shown
            Mount(ws, "write"),
            Mount(ws / "a" / "b" / "c", "hide"),
            Mount(ws / "secret", "hide"),
            Mount(ws / "secret" / ".git", "read_only"),  # would show the hidden secret again
            Mount(ws / "secret", "read_only"),  # at one path the stricter wins
            Mount(Path("/usr"), "show"),  # visible already
        ]
    )
    assert _kinds(mounts, base) == [
        ("home", "private"),
        ("home/.tool", "show"),
        ("home/ws", "write"),
        ("home/ws/a", "pin"),  # the folders holding a hidden path cannot be renamed away
        ("home/ws/secret", "read_only"),
        ("home/ws/secret", "hide"),
        ("home/.config/pod/hooks", "show"),
        ("home/ws/a/b", "pin"),
        ("home/ws/a/b/c", "hide"),
    ]


def test_a_symlink_is_never_mounted_on(base: Path) -> None:
    # A protected name planted as a link (``.envrc -> notes``): a mount on it would land on
    # its target, making notes read-only (or a hidden path's target visible). The plan leaves
    # it out; the walk before each command passes links through to it as they are.
    ws = base / "ws"
    (ws / "notes").mkdir(parents=True)
    (ws / ".envrc").symlink_to("notes")
    (ws / ".git").mkdir()
    spec = SandboxSpec(workspace=ws, read_only=(ws / ".envrc", ws / ".git"), installation=())
    assert _kinds(mount_plan(spec), base) == [("ws", "write"), ("ws/.git", "read_only")]
