"""The editor's files as the file tools see them: a port the pod's client may serve.

When a client of the pod (``pod acp`` for an editor that declared ``fs.readTextFile`` /
``fs.writeTextFile``) offers its files, ``read_file`` and ``edit_file`` read the editor's
buffer (unsaved changes included) and ``write_file`` and ``edit_file`` write through the
editor (so the edit lands in its buffer, with its undo). The pod's rules stay the pod's:

- every path is checked by the pod's scope first (:class:`ScopedFS`), and the client is
  handed the resolved absolute path, never the model's spelling of it;
- a write counts once the file **on disk** holds the content: the pod reads it back, and
  when the editor did not save it (or failed), the pod writes it itself and says so in the
  result. Checkpoints, rewind and ``grep`` all see the disk, so they see the edit;
- whatever the client answers, or fails to answer, the tool goes on with the pod's own
  reading and writing (:class:`ClientFiles` returns None / False for "not done").
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from orchestrator.adapters.scoped_fs import FileText, FsError, ScopedFS

__all__ = [
    "CLIENT_READ_MAX_BYTES",
    "ClientFiles",
    "ClientTerminal",
    "TerminalRun",
    "read_through",
    "write_through",
]

CLIENT_READ_MAX_BYTES = 256 * 1024
"""A buffer larger than this is read from disk instead (the tools' own caps apply there)."""


class ClientFiles(Protocol):
    """Files read and written by the pod's client (an editor): each call answers whether it
    was done; it never raises for the client's failures."""

    async def read_text(self, path: Path, call_id: str) -> str | None:
        """The editor's text of ``path`` (an absolute path the scope allowed); None when the
        client could not give it."""
        ...

    async def write_text(self, path: Path, content: str, call_id: str) -> bool:
        """Ask the editor to write ``content`` to ``path``; whether it says it did."""
        ...


@dataclass(frozen=True)
class TerminalRun:
    """How a command run in the editor's terminal ended."""

    done: bool
    """It ran to its end (or its timeout). False: it did not run, or the pod cannot tell how
    it ended (``started`` says which)."""
    started: bool
    """It may have started: the pod never runs it again itself."""
    output: str = ""
    exit_code: int | None = None
    signal: str | None = None
    timed_out: bool = False
    truncated: bool = False
    message: str = ""
    """Why it was not done."""


class ClientTerminal(Protocol):
    """Commands run in the editor's terminal by the pod's client (``bash`` with the sandbox
    off): the command shows in the editor's terminal panel. A cancelled call kills it there."""

    async def run_command(
        self,
        argv: list[str],
        cwd: Path,
        timeout_s: float,
        output_limit: int,
        call_id: str,
        on_interrupt: Callable[[str], None] | None = None,
    ) -> TerminalRun:
        """Run ``argv`` in ``cwd`` and say how it ended; never raises for the client's
        failures (cancellation is passed on, after the client was told to kill it and
        ``on_interrupt`` was given what the command printed before, when the client said)."""
        ...


async def read_through(
    client: ClientFiles | None, fs: ScopedFS, path: str, call_id: str
) -> FileText | None:
    """The file as the editor has it, when a client serves files and the scope allows the
    path; None to read from disk (no client, a refusal, a buffer too large)."""
    if client is None:
        return None
    try:
        real = fs.resolve_read(path)
    except FsError:
        return None  # the disk read says why, in the pod's words
    if not real.is_file():
        return None  # a folder, a FIFO, a device: the pod's own read refuses it, saying so
    text = await client.read_text(real, call_id)
    if text is None:
        return None
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > CLIENT_READ_MAX_BYTES:
        return None
    return FileText(
        path=real, display=fs.display(real), text=text, total_bytes=size, truncated=False
    )


async def write_through(
    client: ClientFiles | None, fs: ScopedFS, path: str | Path, content: str, call_id: str
) -> tuple[Path, str] | None:
    """Write through the editor when a client serves files: (the path written, a note for
    the result: empty when the editor wrote it, else what the pod did). None when no client
    serves files (the caller writes itself). Raises :class:`FsError` for a path the scope
    refuses, before anything is asked of the editor."""
    if client is None:
        return None
    real = fs.resolve_write(path)
    if real.exists() and not real.is_file():
        return None  # not a regular file: the pod's own write refuses it, saying so
    # As the pod's own write does: the folders the scope allowed, made for the editor (when
    # that fails, the pod's own write below says why).
    with contextlib.suppress(OSError):
        real.parent.mkdir(parents=True, exist_ok=True)
    said = await client.write_text(real, content, call_id)
    if said and _on_disk(fs, real, content):
        return real, ""
    written = fs.write_text(real, content)
    why = "did not write it" if not said else "did not save it to disk"
    return written, f" (the editor {why}; the pod wrote the file itself)"


def _on_disk(fs: ScopedFS, real: Path, content: str) -> bool:
    """Whether the file on disk holds exactly ``content``."""
    try:
        file = fs.read_text(real, max_bytes=len(content.encode("utf-8", "surrogatepass")) + 1)
    except FsError:
        return False
    return not file.truncated and file.text == content
