"""The runtime directory and logs: created private, and refused when someone else prepared them."""

from __future__ import annotations

import os
import stat
import tempfile
import threading
from pathlib import Path

import pytest

from orchestrator.config.paths import (
    UnsafePathError,
    default_socket,
    ensure_private_dir,
    open_private_log,
    runtime_dir,
)

NOBODY = 65534


@pytest.fixture
def no_xdg_runtime(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No XDG_RUNTIME_DIR, and a private stand-in for /tmp; returns the fallback path."""
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    os.chmod(tmp, 0o1777)  # like /tmp: anyone may create entries
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp / f"pod-{os.getuid()}"


def test_the_fallback_is_created_private(no_xdg_runtime: Path) -> None:
    assert runtime_dir() == no_xdg_runtime
    st = os.lstat(no_xdg_runtime)
    assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700
    assert st.st_uid == os.getuid()
    # A second call accepts the directory it made.
    assert default_socket("a") == no_xdg_runtime / "a.sock"


def test_an_existing_private_dir_is_accepted(no_xdg_runtime: Path) -> None:
    no_xdg_runtime.mkdir(mode=0o700)
    (no_xdg_runtime / "keep.json").write_text("{}")
    assert runtime_dir() == no_xdg_runtime
    assert (no_xdg_runtime / "keep.json").read_text() == "{}"


@pytest.mark.parametrize("mode", [0o777, 0o755, 0o750, 0o701, 0o710])
def test_a_pre_created_dir_with_group_or_other_bits_is_refused(
    no_xdg_runtime: Path, mode: int
) -> None:
    no_xdg_runtime.mkdir()
    os.chmod(no_xdg_runtime, mode)
    with pytest.raises(UnsafePathError) as err:
        runtime_dir()
    message = str(err.value)
    assert str(no_xdg_runtime) in message
    assert f"{mode:04o}" in message and "0700" in message
    assert stat.S_IMODE(no_xdg_runtime.stat().st_mode) == mode  # never "repaired" in place


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory to another user needs root")
def test_a_pre_created_dir_owned_by_someone_else_is_refused(no_xdg_runtime: Path) -> None:
    no_xdg_runtime.mkdir(mode=0o700)
    os.chown(no_xdg_runtime, NOBODY, NOBODY)
    with pytest.raises(UnsafePathError) as err:
        runtime_dir()
    assert str(no_xdg_runtime) in str(err.value)
    assert f"owned by uid {NOBODY}" in str(err.value)


def test_a_symlink_in_place_of_the_dir_is_refused(no_xdg_runtime: Path, tmp_path: Path) -> None:
    # The attacker's own private-looking directory, reached through a link.
    target = tmp_path / "attacker"
    target.mkdir(mode=0o700)
    no_xdg_runtime.symlink_to(target)
    with pytest.raises(UnsafePathError) as err:
        runtime_dir()
    assert "symbolic link" in str(err.value) and str(no_xdg_runtime) in str(err.value)
    assert list(target.iterdir()) == []


def test_a_file_in_place_of_the_dir_is_refused(no_xdg_runtime: Path) -> None:
    no_xdg_runtime.write_text("")
    with pytest.raises(UnsafePathError, match="not a directory"):
        runtime_dir()


def test_xdg_runtime_dir_pod_gets_the_same_check(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    xdg = tmp_path / "xdg"
    xdg.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(xdg))
    assert runtime_dir() == xdg / "pod"
    assert stat.S_IMODE((xdg / "pod").stat().st_mode) == 0o700
    os.chmod(xdg / "pod", 0o775)
    with pytest.raises(UnsafePathError, match="0775"):
        runtime_dir()


def test_ensure_private_dir_reports_a_missing_parent(tmp_path: Path) -> None:
    with pytest.raises(UnsafePathError, match="cannot create"):
        ensure_private_dir(tmp_path / "missing" / "pod")


# -- logs ----------------------------------------------------------------------------------------


def test_a_log_is_created_0600_and_appended(tmp_path: Path) -> None:
    path = tmp_path / "p.log"
    for text in (b"one\n", b"two\n"):
        fd = open_private_log(path)
        os.write(fd, text)
        os.close(fd)
    assert path.read_bytes() == b"one\ntwo\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_an_existing_log_is_made_0600(tmp_path: Path) -> None:
    path = tmp_path / "p.log"
    path.write_bytes(b"old\n")
    os.chmod(path, 0o644)
    os.close(open_private_log(path))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_bytes() == b"old\n"


def test_a_planted_symlink_at_the_log_path_is_refused(tmp_path: Path) -> None:
    victim = tmp_path / "bashrc"
    victim.write_text("alias ls='ls --color'\n")
    os.chmod(victim, 0o644)
    path = tmp_path / "p.log"
    path.symlink_to(victim)
    with pytest.raises(UnsafePathError) as err:
        open_private_log(path)
    assert "symbolic link" in str(err.value) and str(path) in str(err.value)
    assert victim.read_text() == "alias ls='ls --color'\n"
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644


def test_a_dangling_symlink_at_the_log_path_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "p.log"
    path.symlink_to(tmp_path / "created-by-the-link")
    with pytest.raises(UnsafePathError, match="symbolic link"):
        open_private_log(path)
    assert not (tmp_path / "created-by-the-link").exists()


def test_a_hard_link_at_the_log_path_is_refused(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    os.link(victim, tmp_path / "p.log")
    with pytest.raises(UnsafePathError, match="hard links"):
        open_private_log(tmp_path / "p.log")
    assert victim.read_text() == "keep\n"


def test_a_fifo_at_the_log_path_is_refused_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / "p.log"
    os.mkfifo(path)
    outcome: list[BaseException | int] = []

    def attempt() -> None:
        try:
            outcome.append(open_private_log(path))
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(5)
    assert outcome, "opening the log blocked on a FIFO"
    assert isinstance(outcome[0], UnsafePathError) and "not a regular file" in str(outcome[0])


# -- names and info files ---------------------------------------------------------------------


def test_info_files_always_live_in_the_runtime_dir(tmp_path: Path) -> None:
    from orchestrator.config.paths import pod_info_path, runtime_dir

    base = runtime_dir()
    assert pod_info_path(base / "alpha.sock") == base / "alpha.json"
    elsewhere = pod_info_path(tmp_path / "project" / "package.sock")
    assert elsewhere.parent == base and elsewhere.name.startswith("_sock-")
    assert pod_info_path(tmp_path / "other" / "package.sock") != elsewhere
    assert pod_info_path(base / ".." / "victim" / "data.sock").parent == base


def test_the_default_socket_of_a_name_that_is_a_path_is_refused() -> None:
    from orchestrator.config.paths import default_socket

    with pytest.raises(UnsafePathError, match="not a pod name"):
        default_socket("../victim/data")
