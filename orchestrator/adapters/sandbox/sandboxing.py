"""A pod's sandbox, ready to wrap programs: the ``bwrap`` found here, what the programs may
see and touch, and the pod's network proxy where ``[sandbox] network`` lists hosts.

One per pod (:func:`open_sandboxing`), shared by ``bash`` and the MCP servers that run
sandboxed, and closed with the pod (:meth:`Sandboxing.aclose` ends the proxy). What a
command sees is settled once (:func:`sandbox_spec`: the hidden places resolved, the shown
ones checked) and completed before each command (:meth:`Sandboxing.command_spec`: the
protected paths and the paths deny rules cover, as they are now).
"""

from __future__ import annotations

import asyncio
import errno
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.adapters.sandbox.bwrap import (
    HOME_SECRETS,
    SandboxSpec,
    SandboxUnavailable,
    find_bwrap,
    sandbox_argv,
)
from orchestrator.adapters.sandbox.protected_scan import MAX_ENTRIES, ProtectedScan, scan_protected
from orchestrator.adapters.sandbox.proxy import NetworkProxy
from orchestrator.adapters.sandbox.rule_paths import PathRules, deny_paths, path_rules
from orchestrator.capabilities.permissions import pod_policy
from orchestrator.core.hosts import loopback_forwards

if TYPE_CHECKING:
    from orchestrator.config.model import PodConfig

__all__ = [
    "Problems",
    "Sandboxing",
    "local_sandboxing",
    "open_sandboxing",
    "sandbox_spec",
    "walked_roots",
]


class Problems:
    """What the sandbox could not do as configured (a hidden path it could not resolve, a
    walk cut at its bound), each said once: to the pod's alerts once one is attached."""

    def __init__(self) -> None:
        self._said: list[str] = []
        self._sink: Callable[[str], None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def add(self, message: str) -> None:
        """Say ``message`` (unless it was said already). Safe from a worker thread (the
        walks before a command run in one): the sink is then called on its own loop."""
        with self._lock:
            if message in self._said:
                return
            self._said.append(message)
        sink, loop = self._sink, self._loop
        if sink is None:
            return
        if loop is not None and not _on_loop(loop):
            loop.call_soon_threadsafe(sink, message)
        else:
            sink(message)

    def attach(self, sink: Callable[[str], None]) -> None:
        """Say what was found so far, and from now on each new problem, to ``sink`` (called
        on the running event loop, if any, whichever thread found the problem)."""
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        self._sink = sink
        for message in self.messages:
            sink(message)

    @property
    def messages(self) -> tuple[str, ...]:
        """Every problem found so far."""
        with self._lock:
            return tuple(self._said)


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


@dataclass(frozen=True, slots=True)
class Sandboxing:
    """How a pod's programs are sandboxed, or why they cannot be here."""

    bwrap: str | None
    """None: no sandbox can be made here (:attr:`unavailable` says why)."""
    spec: SandboxSpec
    """What every command sees, before :meth:`command_spec` completes it."""
    proxy: NetworkProxy | None = None
    """The pod's network proxy, where ``[sandbox] network`` lists hosts."""
    unavailable: str | None = None
    rules: PathRules = field(default_factory=PathRules)
    """The path patterns of the deny rules (hidden or read-only in the sandbox)."""
    problems: Problems = field(default_factory=Problems)
    walked: tuple[Path, ...] = ()
    """Writable folders walked for protected paths besides the workspace (``write_roots``:
    other projects; not ``[sandbox] writable``, caches most often, large and never a place a
    tool runs in)."""

    def argv(
        self,
        command: list[str],
        *,
        tag: str = "",
        cwd: Path | None = None,
        scan: ProtectedScan | None = None,
    ) -> list[str]:
        """``command`` inside the sandbox, starting in ``cwd`` (default: the workspace);
        ``tag`` names it to the proxy; ``scan`` is a walk just made (see :meth:`command_spec`).
        :class:`SandboxUnavailable` when there is none."""
        if self.bwrap is None:
            raise SandboxUnavailable(self.unavailable or "no sandbox can be made here")
        return sandbox_argv(self.bwrap, self.command_spec(cwd, scan=scan), command, tag=tag)

    async def argv_async(
        self,
        command: list[str],
        *,
        tag: str = "",
        cwd: Path | None = None,
        scan: ProtectedScan | None = None,
    ) -> list[str]:
        """:meth:`argv` in a worker thread: its walks of the workspace take milliseconds in a
        project and up to seconds in one as large as ``$HOME``, which must not stall the pod
        (its clients, a pause) meanwhile."""
        return await asyncio.to_thread(self.argv, command, tag=tag, cwd=cwd, scan=scan)

    def command_spec(
        self, cwd: Path | None = None, *, scan: ProtectedScan | None = None
    ) -> SandboxSpec:
        """What the next command sees: :attr:`spec` with the protected paths of the
        workspace and of :attr:`walked` read-only, and the paths deny rules cover hidden or
        read-only, as they are now (a walk of each, bounded). ``scan``: a walk of one of
        these folders made just before (the plant guard's snapshot of the workspace), used
        instead of walking it again."""
        protected: list[Path] = []
        given = scan
        for root in (self.spec.workspace, *self.walked):
            scan = given if given is not None and given.root == root else scan_protected(root)
            if not scan.complete:
                self.problems.add(
                    f"{root} has more than {MAX_ENTRIES:,} entries: protected paths (.git, "
                    ".pod, …) beyond them are not read-only in the sandbox"
                )
            # A link among them is left as it is by the mount plan (a mount on it would land
            # on its target), which lstats every path anyway.
            protected += scan.paths
        denied = deny_paths(self.rules, self.spec.workspace)
        if not denied.complete:
            self.problems.add(
                f"{self.spec.workspace} has more than {MAX_ENTRIES:,} entries: paths the deny "
                "rules cover beyond them are not hidden in the sandbox"
            )
        return replace(
            self.spec,
            read_only=(*self.spec.read_only, *protected, *denied.read_only),
            hidden=(*self.spec.hidden, *denied.hidden),
            cwd=cwd or self.spec.cwd,
        )

    @property
    def proxied(self) -> bool:
        """Whether the network is only the hosts of ``[sandbox] network``, through the proxy."""
        return self.proxy is not None and not self.spec.network

    def refused(self, tag: str) -> list[str]:
        """The ``host:port`` the proxy refused to the program tagged ``tag`` (once)."""
        return self.proxy.refused(tag) if self.proxy is not None else []

    async def aclose(self) -> None:
        """End the proxy (the pod stops)."""
        if self.proxy is not None:
            await self.proxy.close()


async def open_sandboxing(config: PodConfig, *, extra_hidden: Sequence[Path] = ()) -> Sandboxing:
    """The pod's sandbox: ``bwrap`` found (once per process), and the proxy started where
    ``[sandbox] network`` lists hosts. ``extra_hidden`` are more paths no command may see
    (the pod's socket, a host's control socket, a fleet's root). A machine where no sandbox
    can be made gives one whose :attr:`~Sandboxing.unavailable` says why; a proxy that cannot
    start is a :class:`~orchestrator.adapters.sandbox.proxy.ProxyStartError` (the pod would otherwise
    run without the network it was given, or with more)."""
    from orchestrator.config.paths import runtime_dir

    sandboxing = await asyncio.to_thread(local_sandboxing, config, extra_hidden=extra_hidden)
    host_rules = config.sandbox.host_rules()
    if sandboxing.bwrap is None or not host_rules or sandboxing.spec.network:
        return sandboxing
    proxy = await NetworkProxy.start(host_rules, runtime_dir())
    spec = replace(sandboxing.spec, proxy=proxy.folder, forwards=loopback_forwards(host_rules))
    return replace(sandboxing, spec=spec, proxy=proxy)


def local_sandboxing(config: PodConfig, *, extra_hidden: Sequence[Path] = ()) -> Sandboxing:
    """The pod's sandbox without its network proxy (blocking: it resolves paths and finds
    ``bwrap``): what :func:`open_sandboxing` starts from, and what ``pod sandbox show``
    shows."""
    problems = Problems()
    spec = sandbox_spec(config, extra_hidden=extra_hidden, problems=problems)
    try:
        bwrap: str | None = find_bwrap()
        why = None
    except SandboxUnavailable as exc:
        bwrap, why = None, str(exc)
    return Sandboxing(
        bwrap=bwrap,
        spec=spec,
        unavailable=why,
        rules=path_rules(pod_policy(config).deny),
        problems=problems,
        walked=walked_roots(config, spec),
    )


def walked_roots(config: PodConfig, spec: SandboxSpec) -> tuple[Path, ...]:
    """The ``write_roots`` the sandbox made writable, as it resolved them."""
    roots = {Path(os.path.realpath(config.workspace / p)) for p in config.write_roots}
    return tuple(p for p in spec.writable if p in roots)


def sandbox_spec(
    config: PodConfig,
    *,
    extra_hidden: Sequence[Path] = (),
    problems: Problems | None = None,
) -> SandboxSpec:
    """What a pod's sandboxed programs may see and touch (without the proxy, and before
    :meth:`Sandboxing.command_spec` adds what each command finds). Every path is resolved:
    a hidden symlink hides its target; one that cannot be resolved is left out, and said
    to ``problems``."""
    from orchestrator.adapters.sandbox.bwrap import home_readable, home_startup, own_installation
    from orchestrator.config.paths import runtime_dir, state_dir, user_config_file

    said = problems if problems is not None else Problems()
    # The user's skill folders are shown read-only, so a skill's scripts run here too.
    skills = _skill_folders(config)
    home = Path.home()
    workspace = config.workspace.resolve()
    named_hidden = [
        *(home / name for name in HOME_SECRETS),
        state_dir(),
        runtime_dir(),
        user_config_file().parent,
        *([Path(config.session)] if config.session is not None else []),
        # A folder among them that holds the workspace (a fleet's root) is hidden all the
        # same: the mount plan binds the workspace again over it. Never the workspace itself.
        *(p for p in extra_hidden if Path(os.path.realpath(p)) != workspace),
    ]
    hidden = _resolved_hidden(named_hidden, said)
    # What is hidden, as named and as resolved: a shown path may lie inside one only if
    # it was named there (a link planted to point into one shows nothing).
    hiding = list(hidden)
    ws = config.workspace
    real_home = home.resolve()
    writable = _shown(
        (ws / p for p in [*config.write_roots, *config.sandbox.writable]), hiding, said
    )
    readable = (ws / p for p in [*config.read_roots, *config.sandbox.readable, *skills])
    # Where you chose to work (the workspace is ~/.config/nvim), the default read-only list
    # gives way: it guards those places when something above them is writable.
    chosen = {workspace, *writable}
    fixed = [p for p in _shown(home_readable(home), hiding, said, quiet=True) if p not in chosen]
    startup = [p for p in _shown(home_startup(home), hiding, said, quiet=True) if p not in chosen]
    return SandboxSpec(
        workspace=workspace,
        writable=writable,
        readable=_shown(readable, hiding, said),
        home=real_home if real_home != Path("/") and real_home.is_dir() else None,
        home_readable=tuple(fixed),
        hidden=tuple(r for _, r in hidden),
        read_only=tuple(startup),
        network=config.sandbox.network is True,
        installation=own_installation(),
    )


def _skill_folders(config: PodConfig) -> list[Path]:
    from orchestrator.adapters.library.skills import load_skills

    if not config.skills.enabled:
        return []
    return load_skills(config.workspace, config.skills).read_roots()


def _resolved_hidden(paths: Iterable[Path], problems: Problems) -> list[tuple[Path, Path]]:
    """Each path as named and as resolved. A path that does not exist yet is kept (checked
    again before each command); a symlink that leads nowhere, or to ``/``, is left out."""
    found: list[tuple[Path, Path]] = []
    for path in paths:
        named = Path(os.path.abspath(path))
        if not os.path.lexists(named):
            found.append((named, Path(os.path.realpath(named))))
            continue
        try:
            real = named.resolve(strict=True)
        except (OSError, RuntimeError) as exc:
            problems.add(f"{named} is not hidden in the sandbox: {_why_unresolved(named, exc)}")
            continue
        if real == Path("/"):
            problems.add(f"{named} is not hidden in the sandbox: it leads to / (all of it)")
            continue
        found.append((named, real))
    return found


def _why_unresolved(path: Path, exc: BaseException) -> str:
    try:
        target = os.readlink(path)
    except OSError:
        return f"it cannot be resolved ({exc})"
    if isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == errno.ELOOP:
        return f"it is a symlink to {target} that loops"
    return f"it is a symlink to {target}, which does not exist ({exc.__class__.__name__})"


def _shown(
    paths: Iterable[Path],
    hiding: Sequence[tuple[Path, Path]],
    problems: Problems,
    *,
    quiet: bool = False,
) -> tuple[Path, ...]:
    """Paths to show (read or write), resolved; one that resolves into a hidden place it was
    not named in is left out (and said, unless ``quiet``: the default list)."""
    shown: list[Path] = []
    for path in paths:
        named = Path(os.path.abspath(path))
        real = Path(os.path.realpath(named))
        into = next((r for n, r in hiding if _within(real, r) and not _within(named, n)), None)
        if into is not None:
            if not quiet:
                problems.add(
                    f"{named} is not shown in the sandbox: it leads to {real}, inside the "
                    f"hidden {into}"
                )
            continue
        shown.append(real)
    return tuple(dict.fromkeys(shown))


def _within(path: Path, folder: Path) -> bool:
    return path == folder or path.is_relative_to(folder)
