"""The library on disk: which folders, in what order, and a reader a hostile repository
cannot make hang, leak or overflow (real files, FIFOs, symlinks, a sparse 50 MB file)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrator.adapters.library import (
    FILE_MAX_BYTES,
    LibraryDir,
    LibraryRefused,
    library_dirs,
    list_children,
    read_library_text,
)
from orchestrator.config.skills import SkillsConfig


def _dir(tmp_path: Path) -> LibraryDir:
    ws = tmp_path / "ws"
    path = ws / ".pod" / "skills"
    path.mkdir(parents=True)
    return LibraryDir(path, "workspace", False, ws)


def test_the_folders_come_in_order_and_only_the_users_are_trusted(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    dirs = library_dirs("commands", ws, SkillsConfig(), home=home)
    assert [(d.origin, d.trusted) for d in dirs] == [
        ("user", True),
        ("workspace", False),
        ("claude-user", True),
        ("claude-workspace", False),
    ]
    assert dirs[0].path == Path(os.environ["XDG_CONFIG_HOME"]) / "pod" / "commands"
    assert dirs[1].path == ws / ".pod" / "commands"
    assert dirs[2].path == home / ".claude" / "commands"
    assert dirs[3].path == ws / ".claude" / "commands"


def test_settings_turn_folders_off(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    no_claude = SkillsConfig(claude_dirs=False)
    assert [d.origin for d in library_dirs("agents", ws, no_claude, home=home)] == [
        "user",
        "workspace",
    ]
    off = SkillsConfig(enabled=False)
    assert library_dirs("skills", ws, off, home=home) == []
    # Skills off leaves commands and agent files alone.
    assert len(library_dirs("agents", ws, off, home=home)) == 4


def test_a_pod_run_in_the_home_folder_reads_its_claude_folder_once_as_the_users(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    (home / ".claude" / "skills").mkdir(parents=True)
    dirs = library_dirs("skills", home, SkillsConfig(), home=home)
    assert [d.origin for d in dirs] == ["user", "workspace", "claude-user"]


def test_a_file_is_read_as_text(tmp_path: Path) -> None:
    lib = _dir(tmp_path)
    (lib.path / "pdf").mkdir()
    (lib.path / "pdf" / "SKILL.md").write_text("---\nname: pdf\n---\nbody é\n")
    assert read_library_text(lib, "pdf/SKILL.md") == "---\nname: pdf\n---\nbody é\n"


def test_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    lib = _dir(tmp_path)
    (lib.path / "pipe").mkdir()
    os.mkfifo(lib.path / "pipe" / "SKILL.md")
    # Opening a FIFO for reading would wait for a writer; the reader must not.
    with pytest.raises(LibraryRefused, match="not a regular file"):
        read_library_text(lib, "pipe/SKILL.md")
    listing = list_children(lib, "pipe")
    assert listing.children == []
    [refused] = listing.refused
    assert "not a regular file or a folder" in str(refused)


def test_a_device_is_refused(tmp_path: Path) -> None:
    lib = _dir(tmp_path)
    os.symlink("/dev/zero", lib.path / "zero.md")
    with pytest.raises(LibraryRefused, match="leads out"):
        read_library_text(lib, "zero.md")


def test_a_50_mb_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    lib = _dir(tmp_path)
    (lib.path / "big").mkdir()
    huge = lib.path / "big" / "SKILL.md"
    with huge.open("wb") as handle:
        handle.truncate(50 * 1024 * 1024)  # sparse: no 50 MB written to disk
    with pytest.raises(LibraryRefused, match=f"more than the {FILE_MAX_BYTES:,}"):
        read_library_text(lib, "big/SKILL.md")


def test_a_symlink_out_of_the_folder_is_refused_one_inside_is_read(tmp_path: Path) -> None:
    lib = _dir(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("TOKEN")
    os.symlink(secret, lib.path / "leak.md")
    os.symlink("../../../secret.txt", lib.path / "relative.md")
    (lib.path / "real.md").write_text("fine")
    os.symlink("real.md", lib.path / "alias.md")
    for name in ("leak.md", "relative.md"):
        with pytest.raises(LibraryRefused, match="leads out of") as caught:
            read_library_text(lib, name)
        assert "TOKEN" not in str(caught.value)
    assert read_library_text(lib, "alias.md") == "fine"
    listing = list_children(lib)
    assert [c.name for c in listing.children] == ["alias.md", "real.md"]
    assert sorted(Path(r.where).name for r in listing.refused) == ["leak.md", "relative.md"]


def test_a_workspace_folder_that_is_a_link_out_of_the_workspace_is_not_read(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    (ws / ".pod").mkdir(parents=True)
    outside = tmp_path / "dotssh"
    outside.mkdir()
    (outside / "id_rsa").write_text("KEY")
    os.symlink(outside, ws / ".pod" / "skills")
    lib = LibraryDir(ws / ".pod" / "skills", "workspace", False, ws)
    with pytest.raises(LibraryRefused, match="leads out of"):
        read_library_text(lib, "id_rsa")
    listing = list_children(lib)
    assert listing.children == [] and len(listing.refused) == 1


@pytest.mark.parametrize("relative", ["../../../etc/passwd", "a/../../x", "bad\x1bname.md"])
def test_names_with_dot_dot_or_control_characters_are_refused(
    tmp_path: Path, relative: str
) -> None:
    lib = _dir(tmp_path)
    with pytest.raises(LibraryRefused) as caught:
        read_library_text(lib, relative)
    assert "\x1b" not in str(caught.value)


def test_a_file_with_a_control_character_in_its_name_is_refused_when_listed(
    tmp_path: Path,
) -> None:
    lib = _dir(tmp_path)
    (lib.path / "ok.md").write_text("x")
    (lib.path / "evil\x1b]0;pwned\x07.md").write_text("x")
    (lib.path / ".hidden.md").write_text("x")
    listing = list_children(lib)
    assert [c.name for c in listing.children] == ["ok.md"]
    [refused] = listing.refused
    assert "control or invisible" in str(refused) and "\x1b" not in refused.reason


def test_text_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    lib = _dir(tmp_path)
    (lib.path / "latin.md").write_bytes(b"caf\xe9")
    with pytest.raises(LibraryRefused, match="not UTF-8"):
        read_library_text(lib, "latin.md")


def test_a_missing_folder_is_an_empty_listing(tmp_path: Path) -> None:
    lib = LibraryDir(tmp_path / "nowhere", "user", True)
    listing = list_children(lib)
    assert listing.children == [] and listing.refused == []
