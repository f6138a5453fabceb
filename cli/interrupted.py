"""Ctrl-C where a command has nothing to stop: one line on stderr and exit 130, never a
traceback."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import NoReturn

__all__ = ["INTERRUPTED", "interrupted", "quietly_interrupted"]

INTERRUPTED = 130
"""The exit code of a command stopped by Ctrl-C (the shell's 128 + SIGINT)."""


def interrupted() -> NoReturn:
    """Say the command was interrupted, and exit 130."""
    sys.stderr.write("\npod: interrupted\n")
    sys.stderr.flush()
    sys.exit(INTERRUPTED)


@contextlib.contextmanager
def quietly_interrupted() -> Iterator[None]:
    """A Ctrl-C inside the block ends the command with :func:`interrupted`."""
    try:
        yield
    except KeyboardInterrupt:
        interrupted()
