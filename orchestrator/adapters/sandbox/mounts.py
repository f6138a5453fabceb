"""Which mounts a sandbox makes, in which order (pure but for ``lstat``): the policy of what
a sandboxed command sees and writes.

Every place the sandbox treats specially is a :class:`Mount` of one :data:`Kind`. Mounts
apply in order of depth, so **the most specific path wins**: ``$HOME`` is hidden, its
``.cargo/bin`` shown again, a workspace inside it writable, and a secret or a ``.git``
inside the workspace hidden or read-only again. At one path the stricter kind wins
(:data:`RANK`). That order is what keeps a hidden path hidden whatever the workspace: a
workspace that contains ``$HOME`` is bound first, ``~/.ssh`` hidden after it.

A mount that would change nothing is left out: a read-only path already hidden (it would show
it again), a hidden path already hidden, a shown path already visible. So the same plan says
what a command can read, write and not see (``pod sandbox show``). And since a folder holding a
mount point can be renamed with the mount inside, each folder between a writable mount and a
hidden or read-only path in it is "pinned" (bound over itself): none can be renamed away.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

__all__ = ["RANK", "Kind", "Mount", "MountSpec", "mount_args", "mount_plan", "state_of"]

Kind = Literal["private", "show", "fixed", "write", "pin", "read_only", "hide"]
"""``private``: an empty tmpfs by default (``/tmp``, ``$HOME``), that listed paths show
through; ``show``: read-only where hidden otherwise (``readable``); ``fixed``: read-only where
hidden by default or writable (what toolchains need from ``$HOME``: shown, never written, even
by a workspace that contains ``$HOME``); ``write``: writable; ``pin``: a writable folder bound
over itself so that it cannot be renamed (it holds a hidden or read-only path); ``read_only``:
read-only inside a writable place; ``hide``: hidden (an empty tmpfs, or ``/dev/null`` over a
file or a socket)."""

RANK: dict[Kind, int] = {
    "private": 0,
    "show": 1,
    "write": 2,
    "pin": 2,
    "fixed": 3,
    "read_only": 3,
    "hide": 4,
}
"""At one path, a higher rank is mounted later and wins."""

State = Literal["private", "hidden", "read", "write"]


@dataclass(frozen=True, slots=True)
class Mount:
    """One place treated specially, and whether it is a folder (a tmpfs can hide only a
    folder; a file or a socket is hidden by ``/dev/null`` bound over it)."""

    path: Path
    kind: Kind
    is_dir: bool = True


class MountSpec(Protocol):
    """What :func:`mount_plan` reads of a sandbox's spec (:class:`.bwrap.SandboxSpec`, which
    imports this module: a Protocol here keeps the two from importing each other)."""

    @property
    def workspace(self) -> Path: ...
    @property
    def writable(self) -> tuple[Path, ...]: ...
    @property
    def readable(self) -> tuple[Path, ...]: ...
    @property
    def home(self) -> Path | None: ...
    @property
    def home_readable(self) -> tuple[Path, ...]: ...
    @property
    def hidden(self) -> tuple[Path, ...]: ...
    @property
    def read_only(self) -> tuple[Path, ...]: ...
    @property
    def installation(self) -> tuple[Path, ...]: ...


def mount_plan(spec: MountSpec) -> tuple[Mount, ...]:
    """The mounts that change what ``spec``'s command sees, in the order they must be made
    (after the read-only root, ``/dev``, ``/proc`` and the private ``/tmp``). Paths that do
    not exist are left out: there is nothing there to show, hide or protect."""
    wanted: list[tuple[Path, Kind]] = []
    if spec.home is not None:
        wanted.append((spec.home, "private"))
    wanted += [(p, "show") for p in (*spec.installation, *spec.readable)]
    wanted += [(p, "fixed") for p in spec.home_readable]
    wanted += [(p, "write") for p in (spec.workspace, *spec.writable)]
    wanted += [(p, "read_only") for p in spec.read_only]
    wanted += [(p, "hide") for p in spec.hidden]
    return plan(_existing(wanted))


def plan(mounts: Iterable[Mount]) -> tuple[Mount, ...]:
    """``mounts`` ordered (shallower first, then by :data:`RANK`) with those that change
    nothing left out, and the folders holding a hidden or read-only path in a writable place
    pinned (pure)."""
    ordered = sorted(set(mounts), key=_order)
    # What each kept mount makes of its path, for the mounts below it.
    states: dict[Path, State] = {Path("/"): "read", Path("/tmp"): "private"}
    kept: list[Mount] = []
    guarded: list[Mount] = []
    for mount in ordered:
        if mount.path == Path("/"):
            continue  # the root is bound read-only first, whatever else is listed
        below = state_of(mount.path, states, inclusive=True)
        if _changes(mount.kind, below):
            kept.append(mount)
            states[mount.path] = _STATE[mount.kind]
            if below == "write" and mount.kind in ("hide", "read_only", "fixed"):
                guarded.append(mount)
    # A mount point cannot be renamed, but the folder holding it can (and the mount moves
    # with it): ``mv .config x && mkdir -p .config/pod`` would put a new config where the
    # hidden one was. So each folder between a writable mount and what it guards is bound
    # over itself.
    pins: set[Path] = set()
    for mount in guarded:
        for parent in mount.path.parents:
            if parent in states or parent in pins:
                break
            pins.add(parent)
    return tuple(sorted([*kept, *(Mount(p, "pin") for p in pins)], key=_order))


def _order(mount: Mount) -> tuple[int, int, str]:
    return (len(mount.path.parts), RANK[mount.kind], str(mount.path))


def state_of(path: Path, states: dict[Path, State], *, inclusive: bool = False) -> State:
    """What the nearest mount at or above ``path`` makes of it (``inclusive``: ``path`` itself
    counts)."""
    if inclusive and path in states:
        return states[path]
    for parent in path.parents:
        if parent in states:
            return states[parent]
    return "read"


def mount_args(mounts: Sequence[Mount]) -> list[str]:
    """The bubblewrap arguments of a plan, in its order."""
    args: list[str] = []
    for mount in mounts:
        where = str(mount.path)
        if mount.kind in ("private", "hide"):
            args += ["--tmpfs", where] if mount.is_dir else ["--ro-bind", os.devnull, where]
        elif mount.kind in ("write", "pin"):
            args += ["--bind", where, where]
        else:
            args += ["--ro-bind", where, where]
    return args


_STATE: dict[Kind, State] = {
    "private": "private",
    "show": "read",
    "fixed": "read",
    "write": "write",
    "pin": "write",
    "read_only": "read",
    "hide": "hidden",
}


def _changes(kind: Kind, below: State) -> bool:
    """Whether a mount of ``kind`` over a place in state ``below`` changes anything.

    A ``write`` mount is always made (the workspace, a folder the user made writable: even
    inside a hidden place, it is named on purpose); ``show`` only over what is hidden;
    ``fixed`` over what is hidden by default or writable, never over a hidden secret;
    ``read_only`` only over what is writable (never over a hidden place, which it would show
    again); ``private`` and ``hide`` over anything not hidden yet."""
    if kind in ("write", "pin"):
        return True
    if kind == "show":
        return below in ("private", "hidden")
    if kind == "fixed":
        return below in ("private", "write")
    if kind == "read_only":
        return below == "write"
    return below not in ("private", "hidden")


def _existing(wanted: Iterable[tuple[Path, Kind]]) -> list[Mount]:
    """The wanted mounts whose path exists and is no symlink (a mount on a link lands on
    its target; the spec's paths are resolved, so a link here is one planted since)."""
    found: list[Mount] = []
    for path, kind in wanted:
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            continue
        if stat.S_ISLNK(mode):
            continue
        found.append(Mount(path, kind, is_dir=stat.S_ISDIR(mode)))
    return found
