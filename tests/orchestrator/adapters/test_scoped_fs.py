"""The scoped file system against real files: symlinks, FIFOs, devices, binaries, caps."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.adapters.scoped_fs import (
    BinaryFile,
    BrokenSymlink,
    DirListing,
    FsError,
    FsIOError,
    IsADirectory,
    NotADirectory,
    NotFound,
    NotRegularFile,
    OutOfScope,
    PermissionDenied,
    ScopedFS,
    SymlinkEscape,
    is_ignored,
    parse_gitignore,
)

# Every test runs twice: through openat2 (where the kernel has it) and through the walk.
pytestmark = pytest.mark.usefixtures("fs_resolver")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src" / "apps").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / "src" / "apps" / "main.py").write_text("")
    (root / "README.md").write_text("# readme\n")
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    other = tmp_path / "outside"
    other.mkdir()
    (other / "secret.txt").write_text("secret\n")
    return other


@pytest.fixture
def fs(ws: Path) -> ScopedFS:
    return ScopedFS(ws)


def finishes_quickly(fn: Callable[[], object], timeout: float = 5.0) -> BaseException | None:
    """Run ``fn`` in a thread; fail if it has not returned within ``timeout`` seconds."""
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            fn()
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), "the read hung"
    return outcome[0]


# -- resolution -----------------------------------------------------------------------------------


def test_relative_paths_resolve_against_the_workspace(fs: ScopedFS, ws: Path) -> None:
    assert fs.resolve_read("src/app.py") == ws.resolve() / "src" / "app.py"
    assert fs.resolve_read(ws / "src") == ws.resolve() / "src"
    assert fs.resolve_read("") == ws.resolve()


def test_workspace_is_canonical(tmp_path: Path, ws: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(ws)
    fs = ScopedFS(alias)
    assert fs.workspace == ws.resolve()
    assert fs.resolve_read(alias / "src" / "app.py") == ws.resolve() / "src" / "app.py"


def test_out_of_scope_absolute_path(fs: ScopedFS, outside: Path) -> None:
    with pytest.raises(OutOfScope) as exc:
        fs.resolve_read(outside / "secret.txt")
    assert exc.value.path == str(outside / "secret.txt")
    assert "outside the allowed roots" in str(exc.value)


def test_out_of_scope_dotdot(fs: ScopedFS) -> None:
    with pytest.raises(OutOfScope):
        fs.read_text("../outside/secret.txt")


def test_out_of_scope_is_reported_before_existence(fs: ScopedFS) -> None:
    with pytest.raises(OutOfScope):
        fs.resolve_read("/definitely/not/here")


def test_symlink_escape_names_the_target(fs: ScopedFS, ws: Path, outside: Path) -> None:
    (ws / "leak").symlink_to(outside / "secret.txt")
    with pytest.raises(SymlinkEscape) as exc:
        fs.read_text("leak")
    assert exc.value.target == (outside / "secret.txt").resolve()
    assert str((outside / "secret.txt").resolve()) in str(exc.value)


def test_symlinked_directory_escape(fs: ScopedFS, ws: Path, outside: Path) -> None:
    (ws / "other").symlink_to(outside, target_is_directory=True)
    with pytest.raises(SymlinkEscape):
        fs.read_text("other/secret.txt")
    with pytest.raises(SymlinkEscape):
        fs.resolve_write("other/new.txt")


def test_symlink_inside_scope_is_followed(fs: ScopedFS, ws: Path) -> None:
    (ws / "link.py").symlink_to(ws / "src" / "app.py")
    text = fs.read_text("link.py")
    assert text.text == "print('hi')\n"
    assert text.display == "src/app.py"


def test_read_roots_extend_scope_read_only(ws: Path, outside: Path) -> None:
    fs = ScopedFS(ws, read_roots=[outside])
    assert fs.read_text(outside / "secret.txt").text == "secret\n"
    (ws / "leak").symlink_to(outside / "secret.txt")
    assert fs.read_text("leak").text == "secret\n"
    with pytest.raises(OutOfScope, match="read-only"):
        fs.write_text(outside / "new.txt", "x")


def test_write_roots_are_writable_and_readable(ws: Path, outside: Path) -> None:
    fs = ScopedFS(ws, write_roots=[outside])
    target = fs.write_text(outside / "new.txt", "hello")
    assert target == (outside / "new.txt").resolve()
    assert fs.read_text(target).text == "hello"


def test_not_found(fs: ScopedFS) -> None:
    with pytest.raises(NotFound) as exc:
        fs.read_text("src/missing.py")
    assert exc.value.reason == "not found"
    assert exc.value.path == "src/missing.py"


def test_nul_in_path_is_not_found(fs: ScopedFS) -> None:
    with pytest.raises(NotFound):
        fs.resolve_read("src/a\x00b")


def test_broken_symlink(fs: ScopedFS, ws: Path) -> None:
    (ws / "dangling").symlink_to(ws / "nowhere.txt")
    with pytest.raises(BrokenSymlink, match="broken symlink"):
        fs.read_text("dangling")


def test_broken_symlink_in_a_parent(fs: ScopedFS, ws: Path) -> None:
    (ws / "gone").symlink_to(ws / "nowhere", target_is_directory=True)
    with pytest.raises(BrokenSymlink):
        fs.read_text("gone/file.txt")


def test_symlink_loop_is_broken(fs: ScopedFS, ws: Path) -> None:
    (ws / "a").symlink_to(ws / "b")
    (ws / "b").symlink_to(ws / "a")
    with pytest.raises(BrokenSymlink):
        fs.read_text("a")


# -- the resolver: links, chains, loops, roots ------------------------------------------------------


def test_relative_and_absolute_links_inside_are_followed(fs: ScopedFS, ws: Path) -> None:
    (ws / "rel").symlink_to("src/app.py")
    (ws / "src" / "abs").symlink_to(ws / "README.md")
    (ws / "src" / "up").symlink_to("../README.md")
    assert fs.read_text("rel").path == ws.resolve() / "src" / "app.py"
    assert fs.read_text("src/abs").text == "# readme\n"
    assert fs.read_text("src/up").display == "README.md"


def test_a_chain_of_links_is_followed_to_its_end(fs: ScopedFS, ws: Path) -> None:
    (ws / "c").symlink_to(ws / "src" / "app.py")
    (ws / "src" / "b").symlink_to("../c")
    (ws / "a").symlink_to("src/b")
    assert fs.read_text("a").path == ws.resolve() / "src" / "app.py"
    assert fs.resolve_write("a") == ws.resolve() / "src" / "app.py"


def test_a_long_chain_is_followed_but_a_loop_is_broken(fs: ScopedFS, ws: Path) -> None:
    (ws / "l0").symlink_to("README.md")
    for n in range(1, 30):
        (ws / f"l{n}").symlink_to(f"l{n - 1}")
    assert fs.read_text("l29").text == "# readme\n"
    (ws / "self").symlink_to("self")
    with pytest.raises(BrokenSymlink, match="loop"):
        fs.read_text("self")
    (ws / "d").mkdir()
    (ws / "d" / "x").symlink_to("../d/x")
    with pytest.raises(BrokenSymlink, match="loop"):
        fs.read_text("d/x/y")
    with pytest.raises(BrokenSymlink, match="loop"):
        fs.write_text("self", "x")


def test_a_dangling_link_in_a_chain_is_named(fs: ScopedFS, ws: Path) -> None:
    (ws / "end").symlink_to("nowhere.txt")
    (ws / "start").symlink_to("end")
    with pytest.raises(BrokenSymlink, match=r"broken symlink \(end -> nowhere.txt\)"):
        fs.read_text("start")
    assert not fs.exists("start")


def test_a_write_through_a_dangling_link_inside_creates_its_target(fs: ScopedFS, ws: Path) -> None:
    (ws / "later").symlink_to("made/later.txt")
    assert fs.write_text("later", "x") == ws.resolve() / "made" / "later.txt"
    assert (ws / "made" / "later.txt").read_text() == "x"


def test_dotdot_after_a_link_leaves_the_link_target(fs: ScopedFS, ws: Path) -> None:
    # As the kernel does: ``deep/..`` is the parent of where ``deep`` leads, not the workspace.
    (ws / "deep").symlink_to(ws / "src" / "apps", target_is_directory=True)
    assert fs.read_text("deep/../app.py").path == ws.resolve() / "src" / "app.py"
    assert fs.write_text("deep/../new.py", "y") == ws.resolve() / "src" / "new.py"
    assert not (ws / "new.py").exists()


def test_dotdot_through_a_link_cannot_climb_out(fs: ScopedFS, ws: Path, outside: Path) -> None:
    (ws / "up").symlink_to("src/apps/../../..", target_is_directory=True)
    with pytest.raises(SymlinkEscape):
        fs.read_text("up/outside/secret.txt")
    with pytest.raises(SymlinkEscape):
        fs.write_text("up/outside/new.txt", "x")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_dotdot_below_a_missing_name_is_taken_as_written(fs: ScopedFS, ws: Path) -> None:
    assert fs.read_text("nope/../README.md").display == "README.md"
    assert fs.write_text("made/../also.txt", "z") == ws.resolve() / "also.txt"
    assert not (ws / "made").exists()
    with pytest.raises(OutOfScope):
        fs.read_text("nope/../../outside/secret.txt")


def test_a_link_that_passes_outside_and_comes_back_is_inside(
    fs: ScopedFS, ws: Path, outside: Path
) -> None:
    # Only where a path ends counts, as with realpath: nothing outside is read or written.
    (outside / "hop").symlink_to(ws / "src" / "app.py")
    (ws / "bounce").symlink_to(outside / "hop")
    assert fs.read_text("bounce").path == ws.resolve() / "src" / "app.py"


def test_links_across_two_roots(tmp_path: Path, ws: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("guide\n")
    (docs / "back").symlink_to(ws / "src", target_is_directory=True)
    out = tmp_path / "out"
    out.mkdir()
    fs = ScopedFS(ws, read_roots=[docs], write_roots=[out])
    (ws / "docs").symlink_to(docs, target_is_directory=True)
    (ws / "out").symlink_to(out, target_is_directory=True)
    assert fs.read_text("docs/guide.md").text == "guide\n"
    assert fs.read_text("docs/back/app.py").path == ws.resolve() / "src" / "app.py"
    assert fs.write_text("docs/back/via-docs.py", "v") == ws.resolve() / "src" / "via-docs.py"
    assert fs.write_text("out/built/result.txt", "r") == out.resolve() / "built" / "result.txt"
    assert (out / "built" / "result.txt").read_text() == "r"
    assert fs.list_dir("").entries == ["README.md", "docs/", "out/", "src/"]


def test_a_link_into_a_read_only_root_is_refused_for_writes(tmp_path: Path, ws: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("guide\n")
    fs = ScopedFS(ws, read_roots=[docs])
    (ws / "guide.md").symlink_to(docs / "guide.md")
    (ws / "docs").symlink_to(docs, target_is_directory=True)
    assert fs.read_text("guide.md").text == "guide\n"
    with pytest.raises(OutOfScope, match="read-only"):
        fs.write_text("guide.md", "changed")
    with pytest.raises(OutOfScope, match="read-only"):
        fs.write_text("docs/new/file.md", "new")
    assert (docs / "guide.md").read_text() == "guide\n"
    assert sorted(p.name for p in docs.iterdir()) == ["guide.md"]


def test_a_write_root_inside_a_read_root(tmp_path: Path, ws: Path) -> None:
    home = tmp_path / "home"
    (home / "proj" / "out").mkdir(parents=True)
    (home / "notes.txt").write_text("n")
    fs = ScopedFS(ws, read_roots=[home], write_roots=[home / "proj" / "out"])
    assert fs.write_text(home / "proj" / "out" / "a.txt", "a") == (home / "proj" / "out" / "a.txt")
    with pytest.raises(OutOfScope, match="read-only"):
        fs.write_text(home / "proj" / "out" / ".." / "b.txt", "b")
    with pytest.raises(OutOfScope, match="read-only"):
        fs.write_text(home / "notes.txt", "changed")
    assert not (home / "proj" / "b.txt").exists()


def test_a_missing_write_root_is_not_created(tmp_path: Path, ws: Path) -> None:
    fs = ScopedFS(ws, write_roots=[tmp_path / "later"])
    with pytest.raises(NotFound, match="root does not exist"):
        fs.write_text(tmp_path / "later" / "x.txt", "x")
    assert not (tmp_path / "later").exists()


def test_a_fifo_on_the_way_is_not_a_directory(fs: ScopedFS, ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    error = finishes_quickly(lambda: fs.read_text("pipe/x"))
    assert isinstance(error, NotFound)
    error = finishes_quickly(lambda: fs.write_text("pipe/x", "x"))
    assert isinstance(error, NotADirectory)


def test_the_workspace_itself(fs: ScopedFS, ws: Path) -> None:
    assert fs.lookup("").path == ws.resolve()
    assert fs.lookup(".").is_dir
    assert not fs.lookup("README.md").is_dir
    with pytest.raises(IsADirectory):
        fs.write_text("", "x")
    with pytest.raises(OutOfScope):
        fs.lookup("/")


def test_no_file_descriptor_is_left_open(fs: ScopedFS, ws: Path, outside: Path) -> None:
    (ws / "leak").symlink_to(outside / "secret.txt")
    (ws / "loop").symlink_to("loop")
    os.mkfifo(ws / "pipe")
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        fs.read_text("src/app.py")
        fs.write_text("new/deeper/file.txt", "x")
        fs.list_dir("src")
        fs.complete("src/a")
        for bad in ("leak", "loop", "pipe", "missing/x", "src", "../outside/secret.txt"):
            with pytest.raises(FsError):
                fs.read_text(bad)
    assert len(os.listdir("/proc/self/fd")) == before


def test_errors_share_one_root() -> None:
    kinds = [
        OutOfScope,
        SymlinkEscape,
        NotFound,
        BrokenSymlink,
        IsADirectory,
        NotADirectory,
        NotRegularFile,
        BinaryFile,
        PermissionDenied,
        FsIOError,
    ]
    assert all(issubclass(kind, FsError) for kind in kinds)
    assert len(set(kinds)) == len(kinds)
    assert not any(issubclass(a, b) for a in kinds for b in kinds if a is not b)


# -- reading --------------------------------------------------------------------------------------


def test_read_text_whole_file(fs: ScopedFS) -> None:
    text = fs.read_text("src/app.py")
    assert (text.text, text.display, text.total_bytes, text.truncated) == (
        "print('hi')\n",
        "src/app.py",
        12,
        False,
    )


def test_read_text_is_a_directory(fs: ScopedFS) -> None:
    with pytest.raises(IsADirectory):
        fs.read_text("src")


def test_binary_file_with_nul(fs: ScopedFS, ws: Path) -> None:
    (ws / "blob.bin").write_bytes(b"abc\x00def")
    with pytest.raises(BinaryFile, match="NUL"):
        fs.read_text("blob.bin")


def test_binary_file_invalid_utf8(fs: ScopedFS, ws: Path) -> None:
    (ws / "latin1.txt").write_bytes("café".encode("latin-1"))
    with pytest.raises(BinaryFile, match="not UTF-8"):
        fs.read_text("latin1.txt")


def test_cut_on_a_character_boundary(fs: ScopedFS, ws: Path) -> None:
    cap = 16 * 1024
    # Two ASCII bytes, then 3-byte characters: byte 16384 is the middle of a character.
    raw = ("ab" + "語" * (20 * 1024 // 3)).encode()
    assert len(raw) > cap and (cap - 2) % 3 == 2
    (ws / "big.txt").write_bytes(raw)
    text = fs.read_text("big.txt", max_bytes=cap)
    assert text.truncated
    assert text.total_bytes == len(raw)
    assert text.text == "ab" + "語" * ((cap - 2) // 3)
    assert len(text.text.encode()) == cap - 2


def test_exactly_at_the_cap_is_not_truncated(fs: ScopedFS, ws: Path) -> None:
    (ws / "exact.txt").write_text("x" * 100)
    text = fs.read_text("exact.txt", max_bytes=100)
    assert (text.truncated, text.total_bytes, len(text.text)) == (False, 100, 100)


def test_a_huge_file_is_not_read_whole(
    fs: ScopedFS, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    huge = ws / "huge.txt"
    with huge.open("wb") as f:
        f.truncate(64 * 1024 * 1024)  # sparse, and all NULs beyond the first bytes
        f.seek(0)
        f.write(b"x" * 1024)
    requested: list[int] = []
    real_read = os.read

    def counting_read(fd: int, n: int) -> bytes:
        requested.append(n)
        return real_read(fd, n)

    monkeypatch.setattr(os, "read", counting_read)
    text = fs.read_text("huge.txt", max_bytes=100)
    assert sum(requested) <= 101
    assert text.truncated and text.total_bytes == 64 * 1024 * 1024
    assert text.text == "x" * 100


def test_fifo_is_not_a_regular_file(fs: ScopedFS, ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    error = finishes_quickly(lambda: fs.read_text("pipe"))
    assert isinstance(error, NotRegularFile)
    assert "FIFO" in str(error)


def test_dev_zero_is_not_a_regular_file(ws: Path) -> None:
    fs = ScopedFS(ws, read_roots=[Path("/dev")])
    error = finishes_quickly(lambda: fs.read_text("/dev/zero"))
    assert isinstance(error, NotRegularFile)
    assert "device" in str(error)


def test_symlink_to_dev_zero_escapes(fs: ScopedFS, ws: Path) -> None:
    (ws / "zero").symlink_to("/dev/zero")
    error = finishes_quickly(lambda: fs.read_text("zero"))
    assert isinstance(error, SymlinkEscape)


def test_socket_is_not_a_regular_file(tmp_path: Path) -> None:
    # AF_UNIX paths are short; keep the workspace near the root of tmp.
    ws = tmp_path / "s"
    ws.mkdir()
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(ws / "sock"))
        with pytest.raises(NotRegularFile, match="socket"):
            ScopedFS(ws).read_text("sock")
    finally:
        sock.close()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_permission_denied_by_mode(fs: ScopedFS, ws: Path) -> None:
    locked = ws / "locked.txt"
    locked.write_text("x")
    locked.chmod(0)
    try:
        with pytest.raises(PermissionDenied):
            fs.read_text("locked.txt")
    finally:
        locked.chmod(0o644)


def test_permission_denied_from_the_os(fs: ScopedFS, monkeypatch: pytest.MonkeyPatch) -> None:
    def deny(*_args: object, **_kwargs: object) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "open", deny)
    with pytest.raises(PermissionDenied):
        fs.read_text("src/app.py")


def test_io_error(fs: ScopedFS, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*_args: object) -> bytes:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "read", fail)
    with pytest.raises(FsIOError, match="Input/output error"):
        fs.read_text("src/app.py")


# -- writing --------------------------------------------------------------------------------------


def test_write_text_creates_parents(fs: ScopedFS, ws: Path) -> None:
    target = fs.write_text("new/dir/file.txt", "héllo\n")
    assert target == ws.resolve() / "new" / "dir" / "file.txt"
    assert target.read_text(encoding="utf-8") == "héllo\n"


def test_write_overwrites_through_an_in_scope_symlink(fs: ScopedFS, ws: Path) -> None:
    (ws / "alias.py").symlink_to(ws / "src" / "app.py")
    assert fs.write_text("alias.py", "x = 1\n") == ws.resolve() / "src" / "app.py"
    assert (ws / "src" / "app.py").read_text() == "x = 1\n"
    assert (ws / "alias.py").is_symlink()


def test_write_out_of_scope(fs: ScopedFS, outside: Path) -> None:
    with pytest.raises(OutOfScope):
        fs.write_text(outside / "x.txt", "x")
    assert not (outside / "x.txt").exists()


def test_write_through_escaping_symlink(fs: ScopedFS, ws: Path, outside: Path) -> None:
    (ws / "leak").symlink_to(outside / "secret.txt")
    with pytest.raises(SymlinkEscape):
        fs.write_text("leak", "pwned")
    assert (outside / "secret.txt").read_text() == "secret\n"


def test_write_through_dangling_escaping_symlink(fs: ScopedFS, ws: Path, outside: Path) -> None:
    (ws / "trap").symlink_to(outside / "created.txt")
    with pytest.raises(SymlinkEscape):
        fs.write_text("trap", "x")
    assert not (outside / "created.txt").exists()


def test_write_to_a_directory(fs: ScopedFS) -> None:
    with pytest.raises(IsADirectory):
        fs.resolve_write("src")


def test_write_to_a_fifo(fs: ScopedFS, ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    error = finishes_quickly(lambda: fs.write_text("pipe", "x"))
    assert isinstance(error, NotRegularFile)


def test_write_below_a_file(fs: ScopedFS) -> None:
    with pytest.raises(NotADirectory):
        fs.write_text("README.md/inner.txt", "x")


def test_write_replaces_the_file_and_leaves_no_temporary_behind(fs: ScopedFS, ws: Path) -> None:
    target = ws / "src" / "app.py"
    target.chmod(0o750)
    before = target.stat().st_ino
    fs.write_text("src/app.py", "new\n")
    assert target.read_text() == "new\n"
    assert target.stat().st_ino != before
    assert target.stat().st_mode & 0o777 == 0o750
    assert sorted(p.name for p in (ws / "src").iterdir()) == ["app.py", "apps"]


def test_a_failed_write_keeps_the_old_file(
    fs: ScopedFS, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def disk_full(*_args: object) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", disk_full)
    with pytest.raises(FsIOError, match="No space left"):
        fs.write_text("src/app.py", "new\n")
    monkeypatch.undo()
    assert (ws / "src" / "app.py").read_text() == "print('hi')\n"
    assert sorted(p.name for p in (ws / "src").iterdir()) == ["app.py", "apps"]


def test_write_into_a_directory_that_replaced_the_file(fs: ScopedFS, ws: Path) -> None:
    (ws / "gone.txt").mkdir()
    with pytest.raises(IsADirectory):
        fs.write_text("gone.txt", "x")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes files whatever their mode")
def test_a_read_only_file_is_not_replaced(fs: ScopedFS, ws: Path) -> None:
    locked = ws / "locked.txt"
    locked.write_text("keep")
    locked.chmod(0o444)
    with pytest.raises(PermissionDenied):
        fs.write_text("locked.txt", "x")
    assert locked.read_text() == "keep"


# -- listing --------------------------------------------------------------------------------------


def test_list_dir_sorted_shallow_marks_dirs(fs: ScopedFS, ws: Path) -> None:
    (ws / "src" / ".hidden").write_text("")
    listing = fs.list_dir("src")
    assert listing == DirListing(ws.resolve() / "src", "src", ["app.py", "apps/"], 2, False)


def test_list_dir_hides_gitignored_and_hidden(fs: ScopedFS, ws: Path) -> None:
    (ws / ".gitignore").write_text("# build output\n*.log\nbuild/\n/top.txt\n!keep.log\n")
    (ws / "build").mkdir()
    (ws / "debug.log").write_text("")
    (ws / "keep.log").write_text("")
    (ws / "top.txt").write_text("")
    (ws / "src" / "top.txt").write_text("")
    (ws / "src" / "trace.log").write_text("")
    (ws / ".env").write_text("")
    assert fs.list_dir("").entries == ["README.md", "keep.log", "src/"]
    assert fs.list_dir("src").entries == ["app.py", "apps/", "top.txt"]


def test_list_dir_cap(fs: ScopedFS, ws: Path) -> None:
    (ws / "many").mkdir()
    for i in range(30):
        (ws / "many" / f"f{i:02}.txt").write_text("")
    listing = fs.list_dir("many", limit=10)
    assert listing.entries == [f"f{i:02}.txt" for i in range(10)]
    assert (listing.total, listing.truncated) == (30, True)


def test_list_dir_leaves_out_escaping_symlinks(fs: ScopedFS, ws: Path, outside: Path) -> None:
    (ws / "src" / "out").symlink_to(outside, target_is_directory=True)
    (ws / "src" / "in").symlink_to(ws / "src" / "apps", target_is_directory=True)
    assert fs.list_dir("src").entries == ["app.py", "apps/", "in/"]


def test_list_dir_of_a_file(fs: ScopedFS) -> None:
    with pytest.raises(NotADirectory):
        fs.list_dir("README.md")


def test_list_dir_out_of_scope(fs: ScopedFS, outside: Path) -> None:
    with pytest.raises(OutOfScope):
        fs.list_dir(outside)


@pytest.mark.parametrize(
    ("rules", "path", "is_dir", "ignored"),
    [
        ("*.pyc", "a/b/c.pyc", False, True),
        ("node_modules/", "web/node_modules", True, True),
        ("node_modules/", "web/node_modules", False, False),
        ("node_modules/", "web/node_modules/x/y.js", False, True),
        ("/dist", "dist", True, True),
        ("/dist", "pkg/dist", True, False),
        ("docs/*.md", "docs/a.md", False, True),
        ("docs/*.md", "docs/sub/a.md", False, False),
        ("**/gen", "a/b/gen", True, True),
        ("logs/**", "logs/a/b.txt", False, True),
        ("*.log\n!keep.log", "keep.log", False, False),
        ("f?o.[ch]", "fxo.c", False, True),
        ("\\#notes", "#notes", False, True),
    ],
)
def test_gitignore_matching(rules: str, path: str, is_dir: bool, ignored: bool) -> None:
    assert is_ignored(parse_gitignore(rules), path.split("/"), is_dir) is ignored


def test_an_invalid_gitignore_line_is_skipped_not_fatal(fs: ScopedFS, ws: Path) -> None:
    (ws / ".gitignore").write_text("[z-a]\n*.log\n")
    (ws / "debug.log").write_text("")
    assert fs.list_dir("").entries == ["README.md", "src/"]
    assert fs.complete("d") == []


def test_gitignore_matches_undecodable_names(fs: ScopedFS, ws: Path) -> None:
    (ws / ".gitignore").write_text("*.log\n")
    os.close(os.open(os.fsencode(ws) + b"/caf\xe9.log", os.O_CREAT | os.O_WRONLY))
    os.close(os.open(os.fsencode(ws) + b"/caf\xe9.txt", os.O_CREAT | os.O_WRONLY))
    assert fs.list_dir("").entries == ["README.md", "caf\ufffd.txt", "src/"]


# -- completion -----------------------------------------------------------------------------------


def test_complete_prefix(fs: ScopedFS) -> None:
    assert fs.complete("src/ap") == ["src/app.py", "src/apps/"]
    assert fs.complete("src/apps/") == ["src/apps/main.py"]
    assert fs.complete("") == ["README.md", "src/"]
    assert fs.complete("R") == ["README.md"]
    assert fs.complete("src/zz") == []


def test_complete_limit(fs: ScopedFS) -> None:
    assert fs.complete("src/", limit=1) == ["src/app.py"]


def test_complete_hidden_only_when_typed(fs: ScopedFS, ws: Path) -> None:
    (ws / ".github").mkdir()
    assert fs.complete("") == ["README.md", "src/"]
    assert fs.complete(".gi") == [".github/"]


def test_complete_respects_gitignore(fs: ScopedFS, ws: Path) -> None:
    (ws / ".gitignore").write_text("src/apps/\n")
    assert fs.complete("src/ap") == ["src/app.py"]
    assert fs.complete("src/apps/") == []


def test_complete_never_escapes(fs: ScopedFS, ws: Path, outside: Path) -> None:
    (ws / "ext").symlink_to(outside, target_is_directory=True)
    (ws / "extra.txt").write_text("")
    assert fs.complete("../") == []
    assert fs.complete("/") == []
    assert fs.complete(str(outside) + "/") == []
    assert fs.complete("ext") == ["extra.txt"]
    assert fs.complete("ext/") == []


def test_complete_in_a_missing_or_file_dir(fs: ScopedFS) -> None:
    assert fs.complete("nope/x") == []
    assert fs.complete("README.md/") == []


def test_display(fs: ScopedFS, ws: Path, outside: Path) -> None:
    assert fs.display(ws.resolve() / "src" / "app.py") == "src/app.py"
    assert fs.display(ws.resolve()) == "."
    assert fs.display(outside / "secret.txt") == str(outside / "secret.txt")


def test_exists(fs: ScopedFS, outside: Path) -> None:
    assert fs.exists("src/app.py") and fs.exists("src")
    assert not fs.exists("src/nope.py")
    assert not fs.exists(outside / "secret.txt")
