"""A pod's sandbox, ready to wrap programs: the ``bwrap`` found here, what the programs may
see and touch, and the pod's network proxy where ``[sandbox] network`` lists hosts.

One per pod (:func:`open_sandboxing`), shared by ``bash`` and the MCP servers that run
sandboxed, and closed with the pod (:meth:`Sandboxing.aclose` ends the proxy).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.sandbox.bwrap import SandboxSpec, SandboxUnavailable, find_bwrap, sandbox_argv
from orchestrator.sandbox.proxy import NetworkProxy

if TYPE_CHECKING:
    from orchestrator.config import PodConfig


HIDE_ENV = "POD_SANDBOX_HIDE"
"""Further folders the pods of this process hide from their sandboxed programs
(``os.pathsep``-separated): a fleet's root, whose gateway sockets would let a command approve
its own calls, set by the fleet's host actors (``orchestrator/fleet/host_actor.py``)."""


def also_hidden() -> tuple[Path, ...]:
    """The folders :data:`HIDE_ENV` names."""
    return tuple(Path(p) for p in os.environ.get(HIDE_ENV, "").split(os.pathsep) if p)


@dataclass(frozen=True, slots=True)
class Sandboxing:
    """How a pod's programs are sandboxed, or why they cannot be here."""

    bwrap: str | None
    """None: no sandbox can be made here (:attr:`unavailable` says why)."""
    spec: SandboxSpec
    proxy: NetworkProxy | None = None
    """The pod's network proxy, where ``[sandbox] network`` lists hosts."""
    unavailable: str | None = None

    def argv(self, command: list[str], *, tag: str = "", cwd: Path | None = None) -> list[str]:
        """``command`` inside the sandbox, starting in ``cwd`` (default: the workspace);
        ``tag`` names it to the proxy. :class:`SandboxUnavailable` when there is none."""
        if self.bwrap is None:
            raise SandboxUnavailable(self.unavailable or "no sandbox can be made here")
        spec = self.spec if cwd is None else replace(self.spec, cwd=cwd)
        return sandbox_argv(self.bwrap, spec, command, tag=tag)

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


async def open_sandboxing(config: PodConfig) -> Sandboxing:
    """The pod's sandbox: ``bwrap`` found (once per process), and the proxy started where
    ``[sandbox] network`` lists hosts. A machine where no sandbox can be made gives one
    whose :attr:`~Sandboxing.unavailable` says why; a proxy that cannot start is a
    :class:`~orchestrator.sandbox.proxy.ProxyStartError` (the pod would otherwise run
    without the network it was given, or with more)."""
    from orchestrator.paths import runtime_dir

    spec = sandbox_spec(config)
    try:
        bwrap = await asyncio.to_thread(find_bwrap)
    except SandboxUnavailable as exc:
        return Sandboxing(bwrap=None, spec=spec, unavailable=str(exc))
    rules = config.sandbox.host_rules()
    if not rules or spec.network:
        return Sandboxing(bwrap=bwrap, spec=spec)
    proxy = await NetworkProxy.start(rules, runtime_dir())
    return Sandboxing(bwrap=bwrap, spec=replace(spec, proxy=proxy.folder), proxy=proxy)


def sandbox_spec(config: PodConfig) -> SandboxSpec:
    """What a pod's sandboxed programs may see and touch (without the proxy)."""
    from orchestrator.config import user_config_file
    from orchestrator.paths import runtime_dir, state_dir
    from orchestrator.sandbox.bwrap import hidden_paths, read_only_in

    workspace = config.workspace.resolve()
    ws = config.workspace
    return SandboxSpec(
        workspace=workspace,
        writable=tuple((ws / p).resolve() for p in [*config.write_roots, *config.sandbox.writable]),
        readable=tuple((ws / p).resolve() for p in [*config.read_roots, *config.sandbox.readable]),
        hidden=(
            *hidden_paths(Path.home(), state_dir(), runtime_dir(), user_config_file().parent),
            *also_hidden(),
        ),
        network=config.sandbox.network is True,
        extra_ro=read_only_in(workspace),
    )
