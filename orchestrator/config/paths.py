"""Where pods keep things on this machine (light: the CLI imports it before anything else).

The runtime directory holds sockets, ``pod ls`` info files and background pods' logs. When
``XDG_RUNTIME_DIR`` is unset it falls back to ``<tmp>/pod-<uid>``, in a folder every local user
can write to, so another user could pre-create it, plant a symlink where a log goes, or put a
socket of their own there. Before use the directory is created 0700 and then checked with
``lstat``: it must be a real directory, ours, with no group or other permission bits; anything
else is refused. Logs are opened with ``O_NOFOLLOW`` and are 0600.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import tempfile
from pathlib import Path

from orchestrator.errors import SetupError


class UnsafePathError(SetupError):
    """A runtime directory or log is not private to this user (someone else's, shared, a link)."""


def state_dir() -> Path:
    """Where pods keep their state (``$XDG_STATE_HOME/pod`` or ``~/.local/state/pod``)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "pod"


def config_file(workspace: Path) -> Path:
    """Where a workspace keeps its pod configuration."""
    return workspace / ".pod" / "config.toml"


def user_config_file() -> Path:
    """The user's own pod configuration (``$XDG_CONFIG_HOME/pod/config.toml``)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "pod" / "config.toml"


def held_dir(workspace: Path) -> Path:
    """Where what a sandboxed command planted in ``workspace`` is held until the user
    answers (under the state dir, which the sandbox hides): one folder per workspace."""
    import hashlib

    key = hashlib.sha256(os.fsencode(workspace.resolve())).hexdigest()[:16]
    return state_dir() / "held" / key


def runtime_dir() -> Path:
    """Where pod sockets live, created and checked private.

    ``$XDG_RUNTIME_DIR/pod``, else ``<tmp>/pod-<uid>`` (``<tmp>`` is ``$TMPDIR`` or ``/tmp``).
    Raises :class:`UnsafePathError` when the directory is not safe to use.
    """
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base and Path(base).is_dir():
        path = Path(base) / "pod"
    else:
        path = Path(tempfile.gettempdir()) / f"pod-{os.getuid()}"
    return ensure_private_dir(path)


POD_NAME_MAX = 64
_POD_NAME = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._-]{{0,{POD_NAME_MAX - 1}}}\Z")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def is_pod_name(name: str) -> bool:
    """Whether ``name`` may name a pod: a plain file-name word, never a path (no ``/``, no
    leading ``.``), so ``<runtime dir>/<name>.sock`` stays in the runtime directory."""
    return _POD_NAME.match(name) is not None


def safe_pod_name(text: str) -> str:
    """A pod name made from any text (a folder's name): other characters become ``-``."""
    name = _UNSAFE.sub("-", text).lstrip(".-_")[:POD_NAME_MAX].rstrip(".-_")
    return name if is_pod_name(name) else "pod"


def default_socket(name: str) -> Path:
    """The default socket path of a pod name (which must satisfy :func:`is_pod_name`)."""
    if not is_pod_name(name):
        raise UnsafePathError(f"{name!r} is not a pod name")
    return runtime_dir() / f"{name}.sock"


def pod_info_path(socket: Path) -> Path:
    """Where the ``pod ls`` info file of a pod listening on ``socket`` lives.

    Always in the runtime directory, never beside a socket elsewhere (a socket named
    ``package.sock`` in a project must not put its info file over ``package.json``): a socket
    of the runtime directory has ``<name>.json`` beside it, any other socket a file named by a
    hash of its path (``_sock-<hash>.json``; no pod name starts with ``_``).
    """
    base = runtime_dir()
    absolute = Path(os.path.abspath(socket))
    if absolute.parent == Path(os.path.abspath(base)) and absolute.suffix == ".sock":
        return base / f"{absolute.stem}.json"
    digest = hashlib.sha256(os.fsencode(absolute)).hexdigest()[:16]
    return base / f"_sock-{digest}.json"


def private_dir_problem(st: os.stat_result, uid: int) -> str | None:
    """What makes a directory (its ``lstat``) unsafe for ``uid``'s private files, or None."""
    if stat.S_ISLNK(st.st_mode):
        return "it is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    if st.st_uid != uid:
        return f"it is owned by uid {st.st_uid}, not by uid {uid}"
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        return f"its mode is {mode:04o}: other users have access (it must be 0700)"
    return None


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` 0700 if missing, then refuse it unless it is our own private directory."""
    return claim_private_dir(
        path,
        what="the runtime directory",
        advice="Remove it (or set XDG_RUNTIME_DIR to a private directory) and try again",
    )


def claim_private_dir(
    path: Path, *, what: str, advice: str, error: type[Exception] = UnsafePathError
) -> Path:
    """Create ``path`` 0700 if missing (its parent must exist), then use it only when ``lstat``
    shows our own directory with no group or other access; anything else (a link, a file,
    another user's folder, a shared mode) is refused with ``error`` and left as it is.

    ``what`` names the folder in the messages (``the checkpoint folder``); ``advice`` ends the
    refusal, saying what to do."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass  # checked below, whoever made it
    except OSError as exc:
        raise error(f"cannot create {what} {path}: {exc.strerror}") from None
    else:
        os.chmod(path, 0o700)  # mkdir's mode went through the umask
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise error(f"cannot inspect {what} {path}: {exc.strerror}") from None
    problem = private_dir_problem(st, os.getuid())
    if problem is not None:
        raise error(f"refusing {what} {path}: {problem}. {advice}")
    return path


def open_private_log(path: Path) -> int:
    """Open a log file for appending and return its descriptor: 0600, ours, never via a link.

    An existing symlink, FIFO or other non-regular file, or a file of another user, is refused
    with :class:`UnsafePathError` and left untouched.
    """
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    # O_NONBLOCK: a FIFO planted at the path must fail the open, not hang it.
    try:
        fd = os.open(path, flags | os.O_NONBLOCK, 0o600)
    except OSError as exc:
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            mode = 0
        if stat.S_ISLNK(mode):
            raise UnsafePathError(
                f"refusing to write the log {path}: it is a symbolic link"
            ) from None
        if mode and not stat.S_ISREG(mode):
            raise UnsafePathError(
                f"refusing to write the log {path}: it is not a regular file"
            ) from None
        raise UnsafePathError(f"cannot open the log {path}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafePathError(f"refusing to write the log {path}: it is not a regular file")
        if st.st_uid != os.getuid():
            raise UnsafePathError(
                f"refusing to write the log {path}: it is owned by uid {st.st_uid}"
            )
        if st.st_nlink > 1:
            raise UnsafePathError(
                f"refusing to write the log {path}: it has other hard links ({st.st_nlink})"
            )
        if stat.S_IMODE(st.st_mode) != 0o600:
            os.fchmod(fd, 0o600)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd
