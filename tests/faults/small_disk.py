"""A real small file system (tmpfs) that tests can fill up and free again."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class SmallDisk:
    """A mounted tmpfs of a few pages; ``fill`` takes every free byte, ``free`` gives it back."""

    root: Path

    @property
    def filler(self) -> Path:
        return self.root / "filler"

    def fill(self, leave: int = 0) -> None:
        """Write a filler file until the disk is full, then give back ``leave`` bytes."""
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            block = b"\0" * 4096
            while True:
                try:
                    if os.write(fd, block) < len(block):
                        break
                except OSError:
                    break
        finally:
            os.close(fd)
        if leave:
            size = self.filler.stat().st_size
            os.truncate(self.filler, max(0, size - leave))

    def free(self) -> None:
        """Remove the filler."""
        self.filler.unlink(missing_ok=True)


@contextlib.contextmanager
def small_disk(path: Path, size: str = "256k") -> Iterator[SmallDisk]:
    """Mount a tmpfs at ``path`` (root only; the test is skipped elsewhere)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield SmallDisk(path)
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)
