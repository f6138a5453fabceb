"""What a sandboxed command planted: the difference between two snapshots of the workspace's
protected paths, and the words that show it to a person.

Pure: the snapshots are taken by :mod:`orchestrator.adapters.sandbox.plant_snapshot`, and what was
planted is held and undone by :mod:`orchestrator.adapters.sandbox.quarantine`. A protected path
(:func:`orchestrator.capabilities.permissions.protected.protected_names`) configures a command another tool
runs later, outside the sandbox: a new ``.git`` with ``core.fsmonitor`` runs at the user's
next ``git status``. A mount can make the existing ones read-only, but not one that does not
exist yet, so every command's before and after are compared here.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from orchestrator.adapters.sandbox.protected_scan import ProtectedScan

__all__ = [
    "Change",
    "Fingerprint",
    "Kind",
    "Plant",
    "RootSnapshot",
    "Snapshot",
    "command_keys",
    "describe",
    "plant_diff",
    "planted",
]

Kind = Literal["file", "dir", "link", "other"]
Change = Literal["created", "changed", "replaced", "removed"]

DIFF_CHARS = 6000
"""Bound of the diff shown to the person (the rest is said to be cut)."""


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """One path as ``lstat`` saw it, with the bytes of a small file (or a link's target)."""

    kind: Kind
    ino: int = 0
    dev: int = 0
    size: int = 0
    mtime_ns: int = 0
    mode: int = 0
    """Permission bits (a hook that becomes executable starts to run)."""
    digest: str | None = None
    """sha256 of a small file's bytes; None for a large one (compared by lstat alone)."""
    data: bytes | None = None
    """A small file's bytes or a link's target, kept so that a change can be undone."""

    def same_as(self, other: Fingerprint) -> bool:
        """Whether ``other`` is this path unchanged, as far as what runs is concerned."""
        if self.kind != other.kind:
            return False
        if self.kind == "dir":
            return (self.ino, self.dev) == (other.ino, other.dev)
        if self.kind == "link":
            return self.data == other.data
        if (self.mode & 0o111) != (other.mode & 0o111):
            return False
        if self.digest is not None and other.digest is not None:
            return self.digest == other.digest
        return (self.ino, self.size, self.mtime_ns) == (other.ino, other.size, other.mtime_ns)


@dataclass(frozen=True, slots=True)
class RootSnapshot:
    """A protected path found in the workspace (``.git``, ``.pod``, ``.envrc``, …) and, for a
    folder, the files in it that configure commands."""

    path: str
    """Workspace-relative, ``/``-separated."""
    top: Fingerprint
    files: Mapping[str, Fingerprint] = field(default_factory=dict)
    """A folder's tracked files, relative to it (a git dir's ``config``, ``hooks/*``, …)."""
    complete: bool = True
    """False when the folder held more entries than the bound (the rest was not looked at)."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The workspace's protected paths at one moment."""

    roots: Mapping[str, RootSnapshot]
    complete: bool = True
    """False when the workspace's walk stopped at its bound."""
    scan: ProtectedScan | None = field(default=None, compare=False)
    """The walk it was taken from, which the sandbox's mounts of the next command reuse
    (:meth:`~orchestrator.adapters.sandbox.sandboxing.Sandboxing.command_spec`)."""


@dataclass(frozen=True, slots=True)
class Plant:
    """One protected path a command created, replaced, changed or removed."""

    path: str
    """Workspace-relative path of what changed: the protected root itself, or a file in it."""
    change: Change
    root: str
    """The protected root it belongs to (equal to ``path`` when ``whole``)."""
    whole: bool
    """The root as a whole (created, removed, replaced, or a protected file changed); False:
    one tracked file inside a folder that is otherwise the same."""
    before: Fingerprint | None
    after: Fingerprint | None
    before_root: RootSnapshot | None = None
    """For a whole folder: what it held before (to put it back)."""
    after_root: RootSnapshot | None = None
    """For a whole folder: what it holds now (what the person is shown)."""

    def files(self) -> list[tuple[str, Fingerprint | None, Fingerprint | None]]:
        """Each file this plant changes: its path, before and after (a whole folder's
        tracked files; else the path itself)."""
        if not self.whole or (self.before_root is None and self.after_root is None):
            return [(self.path, self.before, self.after)]
        was = self.before_root.files if self.before_root is not None else {}
        now = self.after_root.files if self.after_root is not None else {}
        return [
            (f"{self.path}/{name}", was.get(name), now.get(name))
            for name in sorted(set(was) | set(now))
        ]


def planted(before: Snapshot, after: Snapshot) -> list[Plant]:
    """What changed among the protected paths between ``before`` and ``after``, outermost
    first. A root missing from an incomplete ``after`` is not said to be removed (the walk
    may simply not have reached it)."""
    plants: list[Plant] = []
    for path in sorted(set(before.roots) | set(after.roots), key=_depth_order):
        was, now = before.roots.get(path), after.roots.get(path)
        if was is None and now is not None:
            if now.top.kind == "dir" and now.complete and not now.files:
                continue  # an empty folder configures nothing (the pod's own .pod/scratch)
            plants.append(Plant(path, "created", path, True, None, now.top, None, _dir(now)))
        elif was is not None and now is None:
            if after.complete:
                plants.append(Plant(path, "removed", path, True, was.top, None, _dir(was)))
        elif was is not None and now is not None:
            plants.extend(_compare_root(was, now))
    return plants


def _dir(root: RootSnapshot) -> RootSnapshot | None:
    return root if root.top.kind == "dir" else None


def _depth_order(path: str) -> tuple[int, str]:
    return (path.count("/"), path)


def _compare_root(was: RootSnapshot, now: RootSnapshot) -> list[Plant]:
    if was.top.kind != now.top.kind or (
        was.top.kind == "dir" and (was.top.ino, was.top.dev) != (now.top.ino, now.top.dev)
    ):
        return [Plant(was.path, "replaced", was.path, True, was.top, now.top, _dir(was), _dir(now))]
    if was.top.kind != "dir":
        if was.top.same_as(now.top):
            return []
        return [Plant(was.path, "changed", was.path, True, was.top, now.top)]
    plants: list[Plant] = []
    for name in sorted(set(was.files) | set(now.files)):
        old, new = was.files.get(name), now.files.get(name)
        full = f"{was.path}/{name}"
        if old is None and new is not None:
            plants.append(Plant(full, "created", was.path, False, None, new))
        elif old is not None and new is None:
            if now.complete:
                plants.append(Plant(full, "removed", was.path, False, old, None))
        elif old is not None and new is not None and not old.same_as(new):
            plants.append(Plant(full, "changed", was.path, False, old, new))
    return plants


_COMMAND_KEYS = (
    "core.fsmonitor",
    "core.hookspath",
    "core.pager",
    "core.editor",
    "core.sshcommand",
    "core.askpass",
    "core.gitproxy",
    "credential.helper",
    "diff.external",
    "gpg.program",
    "sequence.editor",
    "include.path",
)
_COMMAND_SUFFIXES = (".textconv", ".clean", ".smudge", ".process", ".driver", ".cmd", ".command")
_COMMAND_PREFIXES = ("alias.", "pager.", "includeif.")


def command_keys(config_text: str) -> list[str]:
    """The keys of a git config that name a command git runs (``core.fsmonitor``,
    ``core.hooksPath``, ``alias.*``, a filter's ``clean``, …), lower-cased, in order."""
    found: list[str] = []
    section = ""
    for raw in config_text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            head = line[1 : line.find("]")] if "]" in line else line[1:]
            name, _, sub = head.partition(" ")
            section = name.strip().lower() + ("." + sub.strip().strip('"') if sub else "")
            line = line[line.find("]") + 1 :].strip() if "]" in line else ""
            if not line:
                continue
        key = line.split("=", 1)[0].strip().lower()
        full = f"{section}.{key}" if section else key
        short = f"{section.split('.', 1)[0]}.{key}"
        if (
            short in _COMMAND_KEYS
            or full in _COMMAND_KEYS
            or full.startswith(_COMMAND_PREFIXES)
            or (section.count(".") and full.endswith(_COMMAND_SUFFIXES))
        ) and full not in found:
            found.append(full)
    return found


def _label(plant: Plant) -> str:
    return f"{plant.path} ({plant.change})"


def describe(plants: Sequence[Plant]) -> str:
    """One line naming what was planted, and the git commands it sets where it sets some."""
    text = ", ".join(_label(p) for p in plants)
    commands: list[str] = []
    for plant in plants:
        for path, _, after in plant.files():
            if after is None or after.data is None or after.kind != "file":
                continue
            if path.rsplit("/", 1)[-1] in ("config", "config.worktree"):
                keys = command_keys(after.data.decode("utf-8", "replace"))
                commands += [f"{k} in {path}" for k in keys]
    if commands:
        text += "; it sets commands git runs: " + ", ".join(commands)
    return text


def plant_diff(plants: Sequence[Plant], limit: int = DIFF_CHARS) -> str | None:
    """A unified diff of the small text files that changed (what a person reads to decide),
    cut at ``limit`` characters; None when there is none to show."""
    parts: list[str] = []
    for plant in plants:
        for path, before, after in plant.files():
            if path.endswith(".sample"):
                continue  # git's own examples, which it never runs
            old, new = _text(before), _text(after)
            if old is None and new is None:
                continue
            lines = difflib.unified_diff(
                (old or "").splitlines(keepends=True),
                (new or "").splitlines(keepends=True),
                fromfile=f"a/{path}" if old is not None else "/dev/null",
                tofile=f"b/{path}" if new is not None else "/dev/null",
            )
            parts.append("".join(ln if ln.endswith("\n") else ln + "\n" for ln in lines))
    text = "".join(parts)
    if not text:
        return None
    if len(text) > limit:
        text = text[:limit] + f"\n[… {len(text) - limit} more characters of the diff]\n"
    return text


def _text(print_: Fingerprint | None) -> str | None:
    if print_ is None or print_.data is None:
        return None
    if print_.kind == "link":
        return f"-> {print_.data.decode('utf-8', 'replace')}\n"
    if b"\0" in print_.data:
        return f"[{print_.size} bytes of binary data]\n"
    return print_.data.decode("utf-8", "replace")
