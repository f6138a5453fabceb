"""Finding live pods: their info files in the runtime dir, a workspace's pod, a name's socket."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from cli.errors import CliError
from orchestrator.config.paths import runtime_dir, safe_pod_name

__all__ = [
    "PodInfo",
    "default_name",
    "find_named_pod",
    "find_pod_for",
    "list_pods",
    "live_pod",
    "socket_for",
]


@dataclass(frozen=True)
class PodInfo:
    """What a live pod advertises beside its socket."""

    name: str
    pid: int
    socket: Path
    workspace: Path
    session: str
    parent: str = ""
    """The parent pod of a child pod (a ``task`` call's); empty for a pod a person started."""

    @property
    def alive(self) -> bool:
        """True when the process exists and its socket accepts connections."""
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        from orchestrator.serving.liveness import socket_is_live

        return socket_is_live(self.socket)


def list_pods() -> list[PodInfo]:
    """Every pod with an info file in the runtime dir, live or stale."""
    pods: list[PodInfo] = []
    base = runtime_dir()
    if not base.is_dir():
        return pods
    for info in sorted(base.glob("*.json")):
        try:
            data = json.loads(info.read_text())
            pods.append(
                PodInfo(
                    name=data["name"],
                    pid=int(data["pid"]),
                    socket=Path(data["socket"]),
                    workspace=Path(data["workspace"]),
                    session=str(data.get("session", "")),
                    parent=str(data.get("parent", "")),
                )
            )
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not a pod's info file
    return pods


def find_pod_for(workspace: Path) -> PodInfo | None:
    """A live pod serving this workspace, if any: the one under the workspace's own name
    first, when a pod started under another name (``pod chat --name``, a fork's) serves it
    beside it."""
    resolved = workspace.resolve()
    # A child pod shares its parent's workspace; the workspace's pod is the parent.
    found = [p for p in list_pods() if p.workspace == resolved and not p.parent and p.alive]
    usual = _usual_names(resolved)
    return next((p for p in found if p.name in usual), found[0] if found else None)


def live_pod(workspace: Path, name: str | None) -> PodInfo | None:
    """The live pod named ``name`` when one is given, else the workspace's."""
    return find_named_pod(name) if name else find_pod_for(workspace)


def find_named_pod(name: str) -> PodInfo | None:
    """The live pod of this name (not a child pod), if any."""
    return next((p for p in list_pods() if p.name == name and not p.parent and p.alive), None)


def _usual_names(resolved: Path) -> tuple[str, str]:
    """The names :func:`default_name` gives a workspace's pod: its folder's, and that with the
    suffix that tells it from another workspace's of the same folder name."""
    name = safe_pod_name(resolved.name or "root")
    return name, f"{name[:57]}-{hashlib.sha256(str(resolved).encode()).hexdigest()[:6]}"


_BOOL_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "1", "0"})
"""Words someone may write after a flag (``--json true``) that then land in the pod argument."""


def socket_for(target: str | None, socket: Path | None, workspace: Path | None = None) -> Path:
    """Resolve ``--socket PATH``, a pod NAME, or the pod of a workspace to a socket path."""
    if socket is not None:
        return socket
    if target:
        candidate = Path(target)
        if candidate.suffix == ".sock" or "/" in target:
            return candidate
        for pod in list_pods():
            if pod.name == target and pod.alive:
                return pod.socket
        default = runtime_dir() / f"{target}.sock"
        if default.exists():
            return default
        hint = " (flags such as --json take no value)" if target.lower() in _BOOL_WORDS else ""
        raise CliError(f"no pod named {target!r} is running (see `pod ls`){hint}")
    found = find_pod_for(workspace or Path.cwd())
    if found is None:
        from cli.saved_turn import cut_off_hint, cut_off_turn

        cut = cut_off_turn(workspace or Path.cwd())
        if cut is not None:
            raise CliError(
                f"no pod is running for {(workspace or Path.cwd()).resolve()}; {cut_off_hint(cut)}"
            )
        raise CliError(
            f"no pod is running for {(workspace or Path.cwd()).resolve()} "
            "(start one with `pod chat` or `pod serve`, or pass --socket)"
        )
    return found.socket


def default_name(workspace: Path) -> str:
    """A pod name for a workspace: its folder name, made unique when another pod has it."""
    resolved = workspace.resolve()
    name, suffixed = _usual_names(resolved)
    clash = any(p.name == name and p.workspace != resolved and p.alive for p in list_pods())
    return suffixed if clash else name
