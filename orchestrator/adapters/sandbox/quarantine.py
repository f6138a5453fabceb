"""Holding what a sandboxed command planted: moved out of the workspace into a folder of the
pod's state (which the sandbox cannot see), the previous state put back, and later either
returned (the user keeps it) or thrown away (denied, withdrawn, nobody to ask).

Each hold is a folder ``<quarantine>/<pod token>/<n>/`` with a ``manifest.json`` written
*before* anything moves, holding what each path was before (a small file's bytes, a folder's
inode). A pod that dies mid-hold leaves it behind; the next pod started on the workspace
finds it (:func:`recover`: the token's lock is free), puts the previous state back wherever
it is not, and says so. Held copies of a recovered hold are left in its folder for the user.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.adapters.sandbox.plant_snapshot import fingerprint
from orchestrator.adapters.sandbox.planted import Fingerprint, Plant, RootSnapshot
from orchestrator.adapters.sandbox.protected_scan import MAX_ENTRIES, SKIPPED_DIRS

__all__ = [
    "LOCK",
    "MANIFEST",
    "Held",
    "HoldingArea",
    "Step",
    "discard",
    "hold",
    "keep",
    "recover",
    "write_manifest",
]

MANIFEST = "manifest.json"
LOCK = "lock"


@dataclass
class Step:
    """What undoing one plant did (so that keeping it can be done in reverse)."""

    held_copy: str | None = None
    """Name under the hold's ``held/`` of what the command left at the path."""
    moved_from: str | None = None
    """A renamed folder found here (workspace-relative) and renamed back to the path."""
    restored: bool = False
    """The previous content was written back at the path from the snapshot."""
    problem: str | None = None


@dataclass
class Held:
    """One command's plants, held."""

    workspace: Path
    folder: Path
    plants: list[Plant]
    steps: list[Step] = field(default_factory=list)

    def problems(self) -> list[str]:
        """What could not be put back as it was (said to the user and the model)."""
        return [s.problem for s in self.steps if s.problem]


class HoldingArea:
    """One pod's folder of holds, locked while the pod lives (a free lock: its pod died)."""

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        token = f"{os.getpid()}-{os.urandom(4).hex()}"
        self.folder = root / token
        self.folder.mkdir(mode=0o700)
        self._lock = os.open(self.folder / LOCK, os.O_CREAT | os.O_RDWR, 0o600)
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        self._count = 0

    def new_hold(self) -> Path:
        """A fresh folder for one hold."""
        self._count += 1
        folder = self.folder / str(self._count)
        folder.mkdir(mode=0o700)
        return folder

    def close(self) -> None:
        """The pod stops with nothing held: the area goes."""
        shutil.rmtree(self.folder, ignore_errors=True)
        with contextlib.suppress(OSError):
            os.close(self._lock)


def _fp_json(print_: Fingerprint | None) -> dict[str, Any] | None:
    if print_ is None:
        return None
    out = asdict(print_)
    out["data"] = base64.b64encode(print_.data).decode() if print_.data is not None else None
    return out


def _fp_load(raw: dict[str, Any] | None) -> Fingerprint | None:
    if raw is None:
        return None
    data = raw.get("data")
    return Fingerprint(**{**raw, "data": base64.b64decode(data) if data is not None else None})


def _plant_json(plant: Plant) -> dict[str, Any]:
    root = plant.before_root
    return {
        "path": plant.path,
        "change": plant.change,
        "root": plant.root,
        "whole": plant.whole,
        "before": _fp_json(plant.before),
        "before_files": {k: _fp_json(v) for k, v in root.files.items()} if root else None,
        "before_complete": root.complete if root else True,
    }


def _plant_load(raw: dict[str, Any]) -> Plant:
    before = _fp_load(raw["before"])
    files = raw.get("before_files")
    root = None
    if files is not None and before is not None:
        loaded = {k: f for k, v in files.items() if (f := _fp_load(v)) is not None}
        root = RootSnapshot(raw["path"], before, loaded, bool(raw.get("before_complete", True)))
    return Plant(raw["path"], raw["change"], raw["root"], raw["whole"], before, None, root)


def _move(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.rename(source, target)
    except OSError:
        shutil.move(os.fspath(source), os.fspath(target))  # another file system


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def _write(path: Path, print_: Fingerprint) -> bool:
    """Put a file or link back from its fingerprint; False when its bytes were not kept."""
    if print_.data is None or print_.kind not in ("file", "link"):
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    if print_.kind == "link":
        os.symlink(os.fsdecode(print_.data), path)
        return True
    temporary = path.with_name(f".{path.name}.pod-restore")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, print_.data)
        os.fchmod(fd, print_.mode or 0o644)
    finally:
        os.close(fd)
    os.replace(temporary, path)
    return True


def _find_folder(workspace: Path, print_: Fingerprint) -> Path | None:
    """Where a renamed folder went (its inode, anywhere in the workspace; bounded)."""
    stack, seen = [os.fspath(workspace)], 0
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > MAX_ENTRIES:
                return None
            try:
                if not entry.is_dir(follow_symlinks=False):
                    continue
                if entry.inode() == print_.ino and entry.stat(follow_symlinks=False).st_dev == (
                    print_.dev
                ):
                    return Path(entry.path)
            except OSError:
                continue
            if entry.name not in SKIPPED_DIRS:
                stack.append(entry.path)
    return None


def _through_link(workspace: Path, path: Path) -> str | None:
    """The first folder between ``workspace`` and ``path`` that is a symlink, if any: the pod
    works on these paths outside the sandbox, and must not follow a link a command planted
    to a folder elsewhere."""
    current = workspace
    for part in path.relative_to(workspace).parts[:-1]:
        current = current / part
        if current.is_symlink():
            return current.relative_to(workspace).as_posix()
    return None


def _unchanged(path: Path, plant: Plant) -> bool:
    now = fingerprint(path)
    if plant.before is None:
        return now is None
    return now is not None and plant.before.same_as(now)


def _undo(workspace: Path, plant: Plant, held_dir: Path, n: int) -> Step:
    """Put back what ``plant.path`` was, moving what is there now into ``held_dir``."""
    path = workspace / plant.path
    step = Step()
    link = _through_link(workspace, path)
    if link is not None:
        step.problem = f"{plant.path}: not undone, {link} is a link"
        return step
    if _unchanged(path, plant):
        return step
    if os.path.lexists(path):
        step.held_copy = str(n)
        _move(path, held_dir / str(n))
    before = plant.before
    if before is None:
        return step
    if before.kind == "dir":
        found = _find_folder(workspace, before)
        if found is not None:
            _move(found, path)
            step.moved_from = found.relative_to(workspace).as_posix()
            return step
        root = plant.before_root
        if root is None or not root.complete or path.name.lower() == ".git":
            step.problem = f"{plant.path}: the folder that was here could not be found to put back"
            return step
        path.mkdir(parents=True, exist_ok=True)
        step.restored = True
        for name, print_ in root.files.items():
            if not _write(path / name, print_):
                step.problem = f"{plant.path}/{name}: its previous content was not kept"
        return step
    if _write(path, before):
        step.restored = True
    else:
        step.problem = f"{plant.path}: its previous content was not kept (too large)"
    return step


def hold(workspace: Path, plants: list[Plant], folder: Path) -> Held:
    """Move each plant out of the workspace into ``folder`` and put back what was there
    (blocking). The manifest is on disk before anything moves, for :func:`recover`."""
    write_manifest(folder, workspace, plants)
    held = Held(workspace, folder, plants)
    for n, plant in enumerate(plants):
        try:
            held.steps.append(_undo(workspace, plant, folder / "held", n))
        except OSError as exc:
            held.steps.append(Step(problem=f"{plant.path}: could not be undone: {exc.strerror}"))
    return held


def keep(held: Held) -> list[str]:
    """The user keeps what the command did: each held path goes back (blocking); returns what
    could not be."""
    problems: list[str] = []
    for plant, step in reversed(list(zip(held.plants, held.steps, strict=False))):
        path = held.workspace / plant.path
        if _through_link(held.workspace, path) is not None:
            problems.append(f"{plant.path}: not put back, a folder on its way is now a link")
            continue
        try:
            if step.moved_from is not None:
                _move(path, held.workspace / step.moved_from)
            elif step.restored:
                _remove(path)
            if step.held_copy is not None:
                _move(held.folder / "held" / step.held_copy, path)
        except OSError as exc:
            problems.append(f"{plant.path}: could not be put back: {exc.strerror}")
    discard(held)
    return problems


def discard(held: Held) -> None:
    """Denied: the held copies go, the previous state stays."""
    shutil.rmtree(held.folder, ignore_errors=True)


def write_manifest(folder: Path, workspace: Path, plants: list[Plant]) -> None:
    """What each path was before, on disk (synced) before anything moves: a pod that dies
    mid-hold leaves it for :func:`recover`."""
    manifest = {"workspace": os.fspath(workspace), "plants": [_plant_json(p) for p in plants]}
    temporary = folder / (MANIFEST + ".new")
    with open(temporary, "w", encoding="utf-8") as out:
        json.dump(manifest, out)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, folder / MANIFEST)


def _free(area: Path) -> bool:
    """Whether the pod that owned ``area`` is gone (its lock can be taken)."""
    try:
        fd = os.open(area / LOCK, os.O_RDWR)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def recover(workspace: Path, root: Path) -> list[str]:
    """Holds a dead pod left under ``root`` for ``workspace``: the previous state is put back
    where it is not, and the area renamed ``undone-…`` (its held copies kept for the user).
    Returns one message per hold recovered."""
    messages: list[str] = []
    try:
        areas = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("undone-"))
    except OSError:
        return messages
    for area in areas:
        if not _free(area):
            continue  # a live pod's
        holds = sorted(p for p in area.iterdir() if (p / MANIFEST).is_file())
        if not holds:
            shutil.rmtree(area, ignore_errors=True)  # its pod died holding nothing
            continue
        for folder in holds:
            try:
                manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
                plants = [_plant_load(raw) for raw in manifest["plants"]]
            except (OSError, ValueError, KeyError, TypeError) as exc:
                messages.append(f"a hold in {folder} could not be read: {exc}")
                continue
            recovered = folder / "recovered"
            undone: list[str] = []
            for n, plant in enumerate(plants):
                try:
                    step = _undo(workspace, plant, recovered, n)
                except OSError as exc:
                    undone.append(f"{plant.path} (not undone: {exc.strerror})")
                    continue
                changed = step.held_copy or step.moved_from or step.restored
                undone.append(f"{plant.path}{' (put back)' if changed else ''}")
            where = root / f"undone-{area.name}" / folder.name
            messages.append(
                "a command's planted paths were held for approval when the pod stopped; "
                f"the workspace's previous state is kept: {', '.join(undone)} "
                f"(held copies: {where})"
            )
        with contextlib.suppress(OSError):
            os.rename(area, root / f"undone-{area.name}")
    return messages
