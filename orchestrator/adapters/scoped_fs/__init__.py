"""The pod's only door to the file system: scope checks, symlinks, FIFOs and caps in one place.

Race-free resolution. Every access resolves its path and opens it in one step, so what is read,
written or listed is provably inside an allowed root, even while someone swaps a directory for a
symlink between two system calls:

* Where ``openat2(2)`` works (Linux 5.6+; probed once, skipped when missing or blocked by a
  seccomp filter), a path that starts with a root is opened relative to an fd of that root with
  ``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS``: the kernel refuses any ``..`` or link that could
  leave it. The root's fd itself is opened with ``RESOLVE_NO_SYMLINKS``, so it is the directory
  its canonical path names. Anything the kernel refuses goes to the walk below, which also
  decides which error to report.
* Otherwise the path is walked one component at a time from an fd of ``/``: each name is opened
  with ``O_PATH | O_NOFOLLOW`` relative to the fd before it, so the kernel never follows a link
  on its own; a symlink is read with ``readlinkat`` and its target spliced into the components
  still to walk (an absolute target restarts at ``/``); ``..`` steps back to the previous fd.
  The walk thus knows the canonical path of every fd it holds. At most 40 links are followed.

The scope check is made on the canonical path of the fd that is then used; a swap after the
check changes nothing, because the read or write goes through the fd, not the path again.
Symlinks that stay inside the roots are followed; one that leads outside is a SymlinkEscape.
``O_PATH`` does not open the file itself, so a FIFO or a device is never opened: a regular file
is opened for reading relative to its directory's fd and checked to be the inode the walk found.

Writes never change a file in place. The new content goes to a temporary file in the same
directory (created through the directory's fd), which then replaces the target (``renameat``).
That is atomic (readers see the old or the new file; a crash or a full disk leaves the old one),
and it breaks hard links: a workspace name hard-linked to a file outside gets a new inode, and
the outside file stays byte-identical. Refusing ``st_nlink > 1`` would stop that escape too,
but would also refuse ordinary files that happen to have two names. The file's mode is kept;
its owner, extended attributes and other hard links are not, and the directory must be
writable. Missing parent directories are created one by one through the fd of the one before.

Errors form one tree::

    FsError
    ├── OutOfScope          the path (as written) lies outside the allowed roots
    ├── SymlinkEscape       the path lies inside, but a symlink on it leads outside
    ├── NotFound
    ├── BrokenSymlink       a dangling symlink or a symlink loop
    ├── IsADirectory
    ├── NotADirectory
    ├── NotRegularFile      FIFO, socket, device
    ├── BinaryFile          not UTF-8, or contains NUL bytes
    ├── PermissionDenied    the operating system refused
    ├── RuleDenied          a permission rule forbids the path (a guarded view)
    └── FsIOError

Modules: :mod:`.fs` (the :class:`ScopedFS`: reads, writes and directory scans), :mod:`.listing`
(what a listing or a completion shows of a directory), :mod:`.fd_io` (reading, creating
directories and the atomic replace on checked fds), :mod:`.resolver` (the walk and
``openat2``), :mod:`.errors` (the tree above), :mod:`.gitignore` (parsing and matching rules).
"""

from __future__ import annotations

from orchestrator.adapters.scoped_fs.errors import (
    BinaryFile,
    BrokenSymlink,
    FsError,
    FsIOError,
    IsADirectory,
    NotADirectory,
    NotFound,
    NotRegularFile,
    OutOfScope,
    PermissionDenied,
    RuleDenied,
    SymlinkEscape,
)
from orchestrator.adapters.scoped_fs.fs import FileBytes, FileText, PathGuard, PathInfo, ScopedFS
from orchestrator.adapters.scoped_fs.gitignore import IgnoreRules, is_ignored, parse_gitignore
from orchestrator.adapters.scoped_fs.listing import DirEntry, DirListing, printable_name

__all__ = [
    "BinaryFile",
    "BrokenSymlink",
    "DirEntry",
    "DirListing",
    "FileBytes",
    "FileText",
    "FsError",
    "FsIOError",
    "IgnoreRules",
    "IsADirectory",
    "NotADirectory",
    "NotFound",
    "NotRegularFile",
    "OutOfScope",
    "PathGuard",
    "PathInfo",
    "PermissionDenied",
    "RuleDenied",
    "ScopedFS",
    "SymlinkEscape",
    "is_ignored",
    "parse_gitignore",
    "printable_name",
]
