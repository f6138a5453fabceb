"""Files given by path: a regular file of a sane size, or one clear error at once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrator.config.regular_file import NotARegularFile, open_regular, read_regular


@pytest.fixture
def odd(tmp_path: Path) -> dict[str, Path]:
    """Paths that are not regular files, as a cloned repository or a typo can make them."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    zero = tmp_path / "zero"
    zero.symlink_to("/dev/zero")
    directory = tmp_path / "dir"
    directory.mkdir()
    return {"FIFO": fifo, "character device": zero, "directory": directory}


@pytest.mark.parametrize("kind", ["FIFO", "character device", "directory"])
def test_anything_but_a_regular_file_is_refused_without_waiting(
    odd: dict[str, Path], kind: str
) -> None:
    with pytest.raises(NotARegularFile) as refused:
        read_regular(odd[kind], max_bytes=1 << 30)
    assert refused.value.strerror == f"it is not a regular file ({kind})"


def test_a_file_over_its_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    sparse = tmp_path / "sparse"
    with sparse.open("wb") as f:
        f.truncate(2 << 30)  # 2 GiB that take no disk
    with pytest.raises(NotARegularFile, match="2,147,483,648 bytes"):
        read_regular(sparse, max_bytes=1 << 20)


def test_a_symlink_is_followed_only_when_asked(tmp_path: Path) -> None:
    target = tmp_path / "real"
    target.write_bytes(b"content\n")
    link = tmp_path / "link"
    link.symlink_to(target)
    assert read_regular(link, max_bytes=100) == b"content\n"
    with pytest.raises(NotARegularFile, match="symbolic link"):
        read_regular(link, max_bytes=100, follow=False)


def test_a_regular_file_is_read_whole_and_a_new_one_created(tmp_path: Path) -> None:
    data = os.urandom(3 << 20)
    (tmp_path / "f").write_bytes(data)
    assert read_regular(tmp_path / "f", max_bytes=4 << 20) == data
    fd = open_regular(tmp_path / "new", os.O_RDWR | os.O_CREAT | os.O_APPEND)
    try:
        os.write(fd, b"x")  # blocking writes again: O_NONBLOCK was for the open only
    finally:
        os.close(fd)
    assert (tmp_path / "new").read_bytes() == b"x"
    assert (tmp_path / "new").stat().st_mode & 0o777 == 0o600


def test_a_fifo_planted_among_a_sessions_spools_is_refused_not_waited_on(
    tmp_path: Path,
) -> None:
    from orchestrator.adapters.session import ToolSpools

    spools = ToolSpools(tmp_path / "s.jsonl")
    name, fd = spools.create("call_1")
    os.close(fd)
    planted = spools.dir / name
    planted.unlink()
    os.mkfifo(planted)
    with pytest.raises(OSError):
        spools.create("call_1")  # a writer's open of a FIFO would wait for a reader
    assert spools.read(name, 100) is None  # a reader's open would wait for a writer
