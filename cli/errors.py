"""Errors the CLI reports as one line on stderr with a non-zero exit."""

from __future__ import annotations

import sys
from typing import TextIO

from cli.terminal_text import visible
from orchestrator.errors import OrchestratorError


class CliError(OrchestratorError):
    """A failure a person can act on; printed without a traceback, the command exiting with
    ``exit_code`` (the front-ends' branch of the tree in :mod:`orchestrator.errors`)."""

    def __init__(self, message: str, *, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def print_error(message: str, stream: TextIO | None = None) -> None:
    """Print ``pod: error: <message>`` to stderr, in red when it is a terminal; control
    characters in the message are shown escaped."""
    out = stream or sys.stderr
    # A message may quote what a model, tool or server sent: its control characters are
    # shown, not obeyed (cli/terminal_text.py).
    message = visible(message)
    if out.isatty():
        out.write(f"\x1b[31mpod: error:\x1b[0m {message}\n")
    else:
        out.write(f"pod: error: {message}\n")
    out.flush()
