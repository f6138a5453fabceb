"""Reading library files safely: inside their folder, regular, bounded, UTF-8.

A library folder may be a cloned repository's, so a file in it may be anything: a FIFO
(opening it would wait forever), a device, a symlink to ``~/.ssh/id_rsa``, 50 MB of text, a
name holding ``../`` or terminal escapes. The reader refuses each with
:class:`~orchestrator.core.library.LibraryRefused`:

* names are checked (:func:`~orchestrator.core.library.name_problem`) part by part;
* the path is resolved and must stay inside the folder's own resolved path (a symlink to
  another file of the folder is fine, one that leads out is not), and the folder must stay
  inside its bound (the workspace, for a workspace's folder);
* the file is opened without blocking and must be a regular file
  (:func:`~orchestrator.config.regular_file.read_regular`), at most :data:`FILE_MAX_BYTES`;
* its bytes must be UTF-8.

Listing a folder is bounded too (:data:`LIST_MAX`), and never follows a link out.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

from orchestrator.adapters.library.dirs import LibraryDir
from orchestrator.config.regular_file import NotARegularFile, read_regular
from orchestrator.core.library import LibraryRefused, name_problem, shown

__all__ = [
    "FILE_MAX_BYTES",
    "LIST_MAX",
    "Child",
    "Listing",
    "list_children",
    "read_library_text",
    "resolve_inside",
]

FILE_MAX_BYTES = 256 * 1024
"""A library file (``SKILL.md``, a command, an agent file) larger than this is refused."""

LIST_MAX = 1000
"""Entries of one library folder looked at; past it the rest are left out, and said so."""


def _where(directory: LibraryDir, relative: str) -> str:
    return str(directory.path / relative) if relative else str(directory.path)


def resolve_inside(directory: LibraryDir, relative: str = "") -> Path:
    """The real path of ``relative`` in ``directory``, checked: every part a plain name,
    and inside the folder once symlinks are resolved. :class:`LibraryRefused` otherwise."""
    where = _where(directory, relative)
    parts = PurePosixPath(relative).parts if relative else ()
    for part in parts:
        problem = name_problem(part)
        if problem is not None:
            raise LibraryRefused(where, f"{problem}: {shown(part)}")
    root = directory.real_root()
    if root is None:
        raise LibraryRefused(
            str(directory.path),
            f"the folder leads out of {directory.within} (a symbolic link): it is not read",
        )
    real = Path(os.path.realpath(root.joinpath(*parts)))
    if real != root and root not in real.parents:
        raise LibraryRefused(where, f"it is a symbolic link that leads out of {directory.path}")
    return real


def read_library_text(
    directory: LibraryDir, relative: str, *, max_bytes: int = FILE_MAX_BYTES
) -> str:
    """The text of the file ``relative`` (``a/SKILL.md``) in ``directory``, or
    :class:`LibraryRefused` saying why not (see the module)."""
    where = _where(directory, relative)
    real = resolve_inside(directory, relative)
    try:
        # follow=False: the path is already resolved; a link swapped in since is refused.
        data = read_regular(real, max_bytes=max_bytes, follow=False)
    except NotARegularFile as exc:
        raise LibraryRefused(where, str(exc.strerror)) from None
    except OSError as exc:
        raise LibraryRefused(where, f"cannot read it: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LibraryRefused(where, f"it is not UTF-8 text (byte {exc.start})") from None


@dataclass(frozen=True)
class Child:
    """An entry of a library folder: its name, and what it is once links are resolved."""

    name: str
    kind: Literal["file", "dir"]


@dataclass
class Listing:
    """A folder's usable entries (sorted by name) and what was refused on the way."""

    children: list[Child] = field(default_factory=list)
    refused: list[LibraryRefused] = field(default_factory=list)


def list_children(directory: LibraryDir, relative: str = "") -> Listing:
    """The entries of ``relative`` in ``directory`` (its top when empty). A missing folder
    is an empty listing; hidden entries are skipped without a word; a bad name, a link out
    or anything but a file or folder is refused, each once."""
    listing = Listing()
    try:
        real = resolve_inside(directory, relative)
    except LibraryRefused as refused:
        listing.refused.append(refused)
        return listing
    try:
        with os.scandir(real) as entries:
            names = []
            for count, entry in enumerate(entries):
                if count >= LIST_MAX:
                    listing.refused.append(
                        LibraryRefused(
                            _where(directory, relative),
                            f"it holds more than {LIST_MAX:,} entries: the rest are not read",
                        )
                    )
                    break
                names.append(entry.name)
    except (FileNotFoundError, NotADirectoryError):
        return listing
    except OSError as exc:
        listing.refused.append(
            LibraryRefused(_where(directory, relative), f"cannot list it: {exc.strerror}")
        )
        return listing
    for name in sorted(names):
        if name.startswith("."):
            continue
        inner = f"{relative}/{name}" if relative else name
        try:
            path = resolve_inside(directory, inner)
            mode = os.stat(path).st_mode
        except LibraryRefused as refused:
            listing.refused.append(refused)
            continue
        except OSError:
            continue  # a dangling link, or gone since: nothing to offer
        if stat.S_ISDIR(mode):
            listing.children.append(Child(name, "dir"))
        elif stat.S_ISREG(mode):
            listing.children.append(Child(name, "file"))
        else:
            listing.refused.append(
                LibraryRefused(_where(directory, inner), "it is not a regular file or a folder")
            )
    return listing
