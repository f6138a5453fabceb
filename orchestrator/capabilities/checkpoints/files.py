"""Putting files back in the workspace without ever following a symbolic link.

Every path is walked one component at a time from a descriptor of the workspace folder, each
folder opened with ``O_NOFOLLOW | O_DIRECTORY``: a symbolic link where a folder should be
(pointing out of the workspace or not) stops the walk with :class:`RestoreError` instead of
being followed. A file is written to a temporary name in its own folder, fsync'd, then
renamed over the old one, so a kill leaves either the old file or the new one. The temporary
name is a function of the file name (:func:`temp_name`), so a restore that is run again after
a kill finds and removes what the killed one left.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from collections.abc import Iterator

from orchestrator.capabilities.checkpoints.errors import RestoreError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

MODE_FILE = "100644"
MODE_EXEC = "100755"
MODE_LINK = "120000"


def temp_name(name: str) -> str:
    """The temporary name a restore writes ``name`` under, beside it."""
    digest = hashlib.sha1(os.fsencode(name)).hexdigest()[:16]
    return f".pod-restore-{digest}.tmp"


def process_umask() -> int:
    """This process's umask, read without changing it (``os.umask`` would, for all threads)."""
    with (
        contextlib.suppress(OSError, ValueError),
        open("/proc/self/status", encoding="ascii") as status,
    ):
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022


class Workspace:
    """The workspace folder, opened once; relative paths are resolved under it, never out."""

    def __init__(self, root: str) -> None:
        self.root_fd = os.open(root, _DIR_FLAGS & ~os.O_NOFOLLOW)
        self.umask = process_umask()
        self.touched: set[tuple[int, int]] = set()
        self._fsync_fds: list[int] = []

    def close(self) -> None:
        """Close every descriptor this object holds."""
        for fd in self._fsync_fds:
            os.close(fd)
        self._fsync_fds.clear()
        os.close(self.root_fd)

    @contextlib.contextmanager
    def parents(self, path: str, *, create: bool) -> Iterator[list[tuple[int, str]]]:
        """The open folders from the root down to ``path``'s parent, each with its name.

        Yields ``[(root_fd, first), (fd_of_first, second), …]``: the last pair is the parent
        descriptor and ``path``'s own name. Missing folders are created when ``create``,
        otherwise an empty list is yielded (the path cannot exist).
        """
        parts = path.split("/")
        chain: list[tuple[int, str]] = []
        opened: list[int] = []
        current = self.root_fd
        try:
            for depth, part in enumerate(parts[:-1]):
                chain.append((current, part))
                try:
                    fd = os.open(part, _DIR_FLAGS, dir_fd=current)
                except FileNotFoundError:
                    if not create:
                        yield []
                        return
                    os.mkdir(part, 0o777, dir_fd=current)
                    fd = os.open(part, _DIR_FLAGS, dir_fd=current)
                except OSError as exc:
                    if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                        raise
                    if not create:
                        yield []
                        return
                    where = "/".join(parts[: depth + 1])
                    raise RestoreError(
                        path, f"{where!r} is not a folder (a file or a symbolic link)"
                    ) from None
                opened.append(fd)
                current = fd
            chain.append((current, parts[-1]))
            yield chain
        finally:
            for fd in opened:
                os.close(fd)

    def remove(self, path: str) -> None:
        """Remove the file or link at ``path`` (absent is fine), then its folders left empty."""
        with self.parents(path, create=False) as chain:
            if not chain:
                return
            parent, name = chain[-1]
            try:
                st = os.stat(name, dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                st = None
            if st is not None:
                if stat.S_ISDIR(st.st_mode):
                    raise RestoreError(path, "it is a folder now, not a file")
                os.unlink(name, dir_fd=parent)
                self._note(parent)
            # Folders this removal emptied go too, deepest first; the root always stays.
            for fd, sub in reversed(chain[:-1]):
                try:
                    os.rmdir(sub, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT):
                        break
                    raise
                self._note(fd)

    def write(self, path: str, mode: str, data: bytes) -> None:
        """Make ``path`` hold ``data`` (a link's target for :data:`MODE_LINK`), atomically."""
        with self.parents(path, create=True) as chain:
            parent, name = chain[-1]
            tmp = temp_name(name)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=parent)
            try:
                old = os.stat(name, dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                old = None
            if mode == MODE_LINK:
                os.symlink(data, tmp, dir_fd=parent)
            else:
                perm = self._permissions(old, executable=mode == MODE_EXEC)
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
                fd = os.open(tmp, flags, perm, dir_fd=parent)
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view) :]
                    os.fchmod(fd, perm)
                    os.fsync(fd)
                finally:
                    os.close(fd)
            if old is not None and stat.S_ISDIR(old.st_mode):
                self._clear_empty_folder(parent, name, path)
            os.rename(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
            self._note(parent)

    def remove_temp(self, path: str) -> None:
        """Remove the temporary file a killed restore may have left for ``path``."""
        with self.parents(path, create=False) as chain:
            if chain:
                parent, name = chain[-1]
                with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                    os.unlink(temp_name(name), dir_fd=parent)

    def sync(self) -> None:
        """fsync every folder an entry was renamed into or removed from."""
        for fd in self._fsync_fds:
            os.fsync(fd)

    def _permissions(self, old: os.stat_result | None, *, executable: bool) -> int:
        # An existing file keeps its permissions (a private file stays private); only the
        # executable bits follow the checkpoint. A new file gets what git would give it.
        if old is not None and stat.S_ISREG(old.st_mode):
            perm = stat.S_IMODE(old.st_mode) & 0o666
            return perm | ((perm & 0o444) >> 2) if executable else perm
        return (0o777 if executable else 0o666) & ~self.umask

    def _clear_empty_folder(self, parent: int, name: str, path: str) -> None:
        """Remove the folder ``name`` if it holds only empty folders; else RestoreError."""
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
        try:
            for entry in os.listdir(fd):
                st = os.stat(entry, dir_fd=fd, follow_symlinks=False)
                if not stat.S_ISDIR(st.st_mode):
                    raise RestoreError(
                        path, "a folder with files the store does not track is there"
                    )
                self._clear_empty_folder(fd, entry, path)
        finally:
            os.close(fd)
        os.rmdir(name, dir_fd=parent)

    def _note(self, fd: int) -> None:
        """Remember a folder to fsync at the end (a duplicate descriptor, by its inode)."""
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino)
        if key not in self.touched:
            self.touched.add(key)
            self._fsync_fds.append(os.dup(fd))
