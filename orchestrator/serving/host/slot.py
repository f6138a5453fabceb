"""One pod a host knows: its socket, always bound, and the pod itself while it is loaded.

The socket stays bound while the pod is unloaded (one descriptor), so clients keep the path
they know; the first connection loads the pod from its session file, which is the crash
recovery path done on purpose: a turn that was paused comes back paused.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.adapters.session import Fence
from orchestrator.config.model import PodConfig
from orchestrator.config.paths import pod_info_path
from orchestrator.protocol import ErrorData, encode_event
from orchestrator.runtime.unload import unload_blockers
from orchestrator.serving.host.control import HostError
from orchestrator.serving.peer import admit_peer
from orchestrator.serving.pod import Hosting, ServedPod, open_pod
from orchestrator.serving.server import bind_socket

__all__ = ["EvictRefused", "PodSlot"]

log = logging.getLogger(__name__)


class EvictRefused(HostError):
    """The pod may not be unloaded now; the reasons say why."""

    def __init__(self, name: str, reasons: list[str]) -> None:
        super().__init__(f"pod {name} stays loaded: {'; '.join(reasons)}")
        self.reasons = reasons


@dataclass(eq=False)
class PodSlot:
    """A registered pod: loaded on demand, evicted when idle."""

    config: PodConfig
    socket_path: Path
    continue_: bool = False
    """For the first load: continue the workspace's latest session. Later loads continue the
    session the first one opened."""
    on_stopped: Callable[[PodSlot], None] = lambda slot: None
    """Called once the pod was shut down by a client (the host forgets it)."""
    fence: Fence | None = None
    """A fleet pod's ownership epoch (``orchestrator.serving.fleet``): every load writes under it."""
    owned: bool = False
    """Shut down with the control connection that loaded it; never in the registry."""
    restored: bool = False
    """Bound again from the registry a previous host left (it was killed), and not loaded by
    this host since: it stays recoverable, but it does not keep a host that leaves with its
    last pod running (``Host.exit_when_empty``). The first load makes it this host's."""
    on_fenced: Callable[[PodSlot], None] = lambda slot: None
    """Called once a write of the loaded pod was refused under :attr:`fence` (another host
    owns the pod now)."""
    hosting: Hosting | None = None
    """What the host gives the pod when it loads (its children's launcher, what its sandbox
    hides of the host)."""
    served: ServedPod | None = None
    last_active: float = field(default_factory=time.monotonic)
    loads: int = 0
    cost_usd: float | None = None
    """What the session cost when the pod was last unloaded by this host (a loaded pod's own
    controller says it; None for one this host never loaded, which it does not load to ask)."""
    _listener: asyncio.Server | None = None
    _loading: asyncio.Lock = field(default_factory=asyncio.Lock)
    _watch: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        """The pod's name."""
        return self.config.pod_name()

    @property
    def loaded(self) -> bool:
        """Whether the pod is in memory now."""
        return self.served is not None

    @property
    def clients(self) -> int:
        """Clients connected now."""
        return self.served.server.clients if self.served is not None else 0

    async def bind(self) -> None:
        """Bind the pod's socket and accept on it (the pod loads at the first connection)."""
        sock = bind_socket(self.socket_path)
        self._listener = await asyncio.start_unix_server(self._accept, sock=sock)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # Checked before the pod loads: a refused peer (a sandboxed command) must not even
        # make the host load a pod.
        peer = await admit_peer(writer, server=f"pod {self.name}")
        if peer is None:
            return
        self.last_active = time.monotonic()
        try:
            served = await self.load()
        except Exception as exc:
            log.exception("loading pod %s failed", self.name)
            with contextlib.suppress(Exception):
                writer.write(
                    encode_event("error", ErrorData(code="internal", message=f"load: {exc}"))
                )
                await writer.drain()
            writer.close()
            return
        try:
            await served.server.serve_connection(reader, writer, peer)
        finally:
            self.last_active = time.monotonic()

    async def load(self) -> ServedPod:
        """The loaded pod, loading it from its session file first if it is not."""
        async with self._loading:
            if self.served is not None:
                return self.served
            served = await open_pod(
                self.config,
                socket_path=self.socket_path,
                continue_=self.continue_,
                listen=False,
                fence=self.fence,
                hosting=self.hosting,
            )
            # From now on this pod is this session: every reload continues it. (Copied only
            # when it changes: an object made now outlives the pod's, and one such object
            # keeps the allocator from giving back the pages around it.)
            if self.config.session != served.pod.session_path:
                self.config = self.config.model_copy(update={"session": served.pod.session_path})
            self.continue_ = True
            self.restored = False
            self.served = served
            served.controller.transcript.on_fenced = lambda exc: self.on_fenced(self)
            self.loads += 1
            self.last_active = time.monotonic()
            self._watch = asyncio.create_task(self._until_stopped(served))
            return served

    async def _until_stopped(self, served: ServedPod) -> None:
        """A client shut the pod down: close it, free the socket, and let the host forget it."""
        await served.stopped.wait()
        await served.controller.wait_idle()
        async with self._loading:
            if self.served is served:
                self.served = None
                await served.close()
        await self.unbind()
        self.on_stopped(self)

    def blockers(self) -> list[str]:
        """Why the pod may not be unloaded now (empty: it may)."""
        if self.served is None:
            return ["it is not loaded"]
        reasons = unload_blockers(self.served.controller)
        if self.served.server.clients:
            reasons.append(f"{self.served.server.clients} client(s) attached")
        return reasons

    def idle_for(self) -> float:
        """Seconds since anyone used the pod (0 while it is busy or has clients)."""
        if self.served is not None and (self.served.server.clients or self.blockers()):
            self.last_active = time.monotonic()
        return time.monotonic() - self.last_active

    async def evict(self) -> None:
        """Unload the pod to its session file (:class:`EvictRefused` when it may not be)."""
        async with self._loading:
            if self.served is None:
                return
            reasons = self.blockers()
            if reasons:
                raise EvictRefused(self.name, reasons)
            served, self.served = self.served, None
            self.cost_usd = served.controller.cost_usd()
            watch, self._watch = self._watch, None
            if watch is not None:
                # Awaited and dropped: a cancelled task keeps its traceback, and with it the
                # whole pod, alive.
                watch.cancel()
                await asyncio.wait([watch])
            await served.close(unload=True)
            self.last_active = time.monotonic()

    async def shutdown(self) -> None:
        """Shut the pod down as ``pod serve`` does on SIGTERM (the host stops)."""
        served = self.served
        if served is None:
            # Unloaded, its session is already closed; what says it is served goes with it.
            with contextlib.suppress(OSError):
                pod_info_path(self.socket_path).unlink()
        else:
            served.request_shutdown()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(served.stopped.wait()), 30)
            if self._watch is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.shield(self._watch), 30)
        await self.unbind()

    async def unbind(self) -> None:
        """Stop accepting on the pod's socket and remove it."""
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
            with contextlib.suppress(OSError):
                self.socket_path.unlink()
