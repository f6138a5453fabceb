"""Escapes from the workspace under attack: symlink swaps racing the pod, and hard links.

A thread keeps exchanging a workspace directory with a symlink to an outside directory while
the pod reads and writes below it, through :class:`ScopedFS` and through the real file tools.
Every attempt either stays inside (inside content, inside writes) or fails with a clean error;
none may return outside content or touch the outside directory. Each race runs with both
resolvers: ``openat2`` (when the kernel has it) and the portable component walk.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import os
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from orchestrator.adapters.scoped_fs import FsError, ScopedFS, SymlinkEscape
from orchestrator.capabilities.tools.base import ToolContext, ToolError
from orchestrator.capabilities.tools.files import EditFileTool, ReadFileTool, WriteFileTool

ATTEMPTS = 500
INSIDE = "alpha inside\n"
OUTSIDE = "alpha OUTSIDE\n"

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _renameat2() -> Callable[..., int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        fn: Callable[..., int] = libc.renameat2
    except (OSError, AttributeError):
        return None
    return fn


_RENAMEAT2 = _renameat2()


def exchange(a: Path, b: Path) -> None:
    """Swap two names atomically (RENAME_EXCHANGE), or in two renames where that is missing."""
    if _RENAMEAT2 is not None:
        if _RENAMEAT2(_AT_FDCWD, bytes(a), _AT_FDCWD, bytes(b), _RENAME_EXCHANGE) == 0:
            return
        if ctypes.get_errno() not in (errno.ENOSYS, errno.EINVAL):
            raise OSError(ctypes.get_errno(), "renameat2")
    aside = a.with_name(a.name + ".aside")
    os.rename(a, aside)
    os.rename(b, a)
    os.rename(aside, b)


@dataclass
class Arena:
    """``ws/box`` is a real directory or a symlink to ``outside``, changing all the time."""

    ws: Path
    outside: Path
    stop: threading.Event = field(default_factory=threading.Event)
    swaps: int = 0

    @property
    def box(self) -> Path:
        return self.ws / "box"

    def swapper(self) -> None:
        decoy = self.ws / ".decoy"
        while not self.stop.is_set():
            exchange(self.box, decoy)
            self.swaps += 1
            # Hand the GIL over now and then, so the pod meets both states about as often.
            time.sleep(0)

    def outside_touched(self) -> bool:
        """Whether a write reached the outside directory; puts it back as it was."""
        names = sorted(os.listdir(self.outside))
        content = (self.outside / "data.txt").read_text()
        if names == ["data.txt"] and content == OUTSIDE:
            return False
        for name in names:
            target = self.outside / name
            if target.is_dir():
                for inner in sorted(target.rglob("*"), reverse=True):
                    inner.rmdir() if inner.is_dir() else inner.unlink()
                target.rmdir()
            else:
                target.unlink()
        (self.outside / "data.txt").write_text(OUTSIDE)
        return True


@pytest.fixture
def arena(tmp_path: Path, fs_resolver: str) -> Iterator[Arena]:
    ws = tmp_path / "ws"
    (ws / "box").mkdir(parents=True)
    (ws / "box" / "data.txt").write_text(INSIDE)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data.txt").write_text(OUTSIDE)
    (ws / ".decoy").symlink_to(outside, target_is_directory=True)
    found = Arena(ws, outside)
    thread = threading.Thread(target=found.swapper, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        found.stop.set()
        thread.join(5)


@dataclass
class Tally:
    """What the attempts came to."""

    escapes: int = 0
    succeeded: int = 0
    refused: int = 0
    unclean: list[BaseException] = field(default_factory=list)

    def count(self, outcome: bool | BaseException, clean: type[BaseException]) -> None:
        """Count one attempt: whether it escaped, or what it raised."""
        if isinstance(outcome, clean):
            self.refused += 1
        elif isinstance(outcome, BaseException):
            self.unclean.append(outcome)
        else:
            self.succeeded += 1
            self.escapes += outcome

    def check(self, arena: Arena) -> None:
        assert self.escapes == 0, f"{self.escapes} of {ATTEMPTS} attempts escaped"
        assert self.unclean == [], f"failures that are not clean errors: {self.unclean[:3]}"
        # The race must really have happened: some attempts went through, some met the link.
        assert self.succeeded > 0 and self.refused > 0, self
        assert arena.swaps > 0


def attempt(tally: Tally, clean: type[BaseException], fn: Callable[[], bool]) -> None:
    """Run one attempt; ``fn`` returns whether it escaped."""
    try:
        outcome: bool | BaseException = fn()
    except BaseException as exc:
        outcome = exc
    tally.count(outcome, clean)


async def attempt_async(
    tally: Tally, clean: type[BaseException], fn: Callable[[], Awaitable[bool]]
) -> None:
    """The same for a coroutine."""
    try:
        outcome: bool | BaseException = await fn()
    except BaseException as exc:
        outcome = exc
    tally.count(outcome, clean)


# -- through ScopedFS ---------------------------------------------------------------------------


def test_reads_never_see_outside_content_while_a_directory_is_swapped(arena: Arena) -> None:
    fs = ScopedFS(arena.ws)
    tally = Tally()
    for _ in range(ATTEMPTS):
        attempt(tally, FsError, lambda: "OUTSIDE" in fs.read_text("box/data.txt").text)
    tally.check(arena)


def test_writes_never_touch_outside_while_a_directory_is_swapped(arena: Arena) -> None:
    fs = ScopedFS(arena.ws)
    tally = Tally()

    def write(n: int) -> bool:
        target = "box/data.txt" if n % 2 else f"box/new{n}/deeper/file.txt"
        fs.write_text(target, f"alpha written {n}\n")
        return arena.outside_touched()

    for n in range(ATTEMPTS):
        attempt(tally, FsError, functools.partial(write, n))
        # A refused write may still have raced the outside directory.
        tally.escapes += arena.outside_touched()
    tally.check(arena)


def test_listing_never_shows_outside_names_while_a_directory_is_swapped(arena: Arena) -> None:
    (arena.outside / "outside-only.txt").write_text("")
    fs = ScopedFS(arena.ws)
    tally = Tally()
    for _ in range(ATTEMPTS):
        attempt(tally, FsError, lambda: "outside-only.txt" in fs.list_dir("box").entries)
    (arena.outside / "outside-only.txt").unlink()
    tally.check(arena)


# -- through the file tools ---------------------------------------------------------------------


@pytest.fixture
def ctx(arena: Arena) -> ToolContext:
    return ToolContext(
        fs=ScopedFS(arena.ws), workspace=arena.ws, scratch_dir=arena.ws / ".pod" / "scratch"
    )


async def test_read_file_never_returns_outside_content(arena: Arena, ctx: ToolContext) -> None:
    tally = Tally()

    async def read() -> bool:
        output = await ReadFileTool().run({"path": "box/data.txt"}, ctx)
        return "OUTSIDE" in (output.content or "")

    for _ in range(ATTEMPTS):
        await attempt_async(tally, ToolError, read)
    tally.check(arena)


async def test_write_and_edit_file_never_touch_outside(arena: Arena, ctx: ToolContext) -> None:
    writes, edits = Tally(), Tally()

    async def write() -> bool:
        await WriteFileTool().run({"path": "box/data.txt", "content": INSIDE}, ctx)
        return arena.outside_touched()

    async def edit() -> bool:
        args = {"path": "box/data.txt", "old_string": "alpha", "new_string": "beta"}
        await EditFileTool().run(args, ctx)
        return arena.outside_touched()

    for _ in range(ATTEMPTS // 2):
        await attempt_async(writes, ToolError, write)
        writes.escapes += arena.outside_touched()
        await attempt_async(edits, ToolError, edit)
        edits.escapes += arena.outside_touched()
    writes.check(arena)
    edits.check(arena)


# -- hard links ---------------------------------------------------------------------------------


@pytest.fixture
def linked(tmp_path: Path, fs_resolver: str) -> tuple[Path, Path]:
    """An outside file and a hard link to it inside the workspace."""
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"alpha outside\n")
    os.link(outside, ws / "linked.txt")
    return ws, outside


def test_write_text_breaks_a_hard_link_to_an_outside_file(linked: tuple[Path, Path]) -> None:
    ws, outside = linked
    (ws / "linked.txt").chmod(0o640)
    ScopedFS(ws).write_text("linked.txt", "pwned\n")
    assert outside.read_bytes() == b"alpha outside\n"
    assert (ws / "linked.txt").read_text() == "pwned\n"
    assert (ws / "linked.txt").stat().st_nlink == 1
    # The replacement keeps the file's mode.
    assert (ws / "linked.txt").stat().st_mode & 0o777 == 0o640


async def test_write_file_and_edit_file_leave_a_hard_linked_outside_file_alone(
    linked: tuple[Path, Path],
) -> None:
    ws, outside = linked
    ctx = ToolContext(fs=ScopedFS(ws), workspace=ws, scratch_dir=ws / ".pod" / "scratch")
    args = {"path": "linked.txt", "old_string": "alpha", "new_string": "beta"}
    await EditFileTool().run(args, ctx)
    assert outside.read_bytes() == b"alpha outside\n"
    assert (ws / "linked.txt").read_text() == "beta outside\n"

    os.unlink(ws / "linked.txt")
    os.link(outside, ws / "linked.txt")
    await WriteFileTool().run({"path": "linked.txt", "content": "pwned\n"}, ctx)
    assert outside.read_bytes() == b"alpha outside\n"
    assert (ws / "linked.txt").read_text() == "pwned\n"


def test_a_symlink_swap_is_refused_as_an_escape(tmp_path: Path) -> None:
    """The error a raced read meets is the ordinary escape error, naming the target."""
    ws = tmp_path / "ws"
    (ws / "box").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data.txt").write_text(OUTSIDE)
    (ws / ".decoy").symlink_to(outside, target_is_directory=True)
    exchange(ws / "box", ws / ".decoy")
    with pytest.raises(SymlinkEscape) as exc:
        ScopedFS(ws).read_text("box/data.txt")
    assert exc.value.target == (outside / "data.txt").resolve()


# -- torn writes --------------------------------------------------------------------------------


def test_readers_never_see_a_half_written_file(tmp_path: Path, fs_resolver: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    versions = ["a" * 200_000, "b" * 200_000]
    (ws / "big.txt").write_text(versions[0])
    fs = ScopedFS(ws)
    stop = threading.Event()

    def writer() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            fs.write_text("big.txt", versions[n % 2])

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    seen: list[str] = []
    try:
        for _ in range(200):
            try:
                seen.append(fs.read_text("big.txt").text)
            except FsError as exc:
                # Only a file that kept changing under three tries in a row may be refused.
                assert "kept changing" in exc.reason
    finally:
        stop.set()
        thread.join(5)
    torn = [text[:1] + f"…({len(text)} chars)" for text in seen if text not in versions]
    assert torn == []
    assert seen
