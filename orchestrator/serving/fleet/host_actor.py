"""``PodHost``: one Ray actor serving many pods, as ``pod host`` does in one process.

A few of them run per node (an actor is a process, ~47 MiB: never one per pod). Each wraps a
:class:`orchestrator.serving.host.Host`, which loads a pod from its session file when a connection
arrives and unloads it when idle; what the actor adds is ownership. Before it serves a pod it
takes the pod's next epoch in Ray's KV, claims the session file with it
(``orchestrator.adapters.session.fencing``), and records itself in the directory; from then on every
record of that pod is written under the epoch, and refused once another host took it over.

Connections are byte streams: the gateway ``open``s one (the actor connects to the pod's
socket inside its own process), ``send``s client lines into it, and reads what the pod writes
through ``events``, a Ray streaming generator, one chunk per read (many lines under load).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import shutil
import socket
import tempfile
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import ray

from orchestrator.adapters.session import Fence, claim_session
from orchestrator.config.model import PodConfig
from orchestrator.protocol import MAX_LINE_BYTES
from orchestrator.serving.fleet.directory import Directory, FleetError
from orchestrator.serving.fleet.raykv import RayKV
from orchestrator.serving.host import Host, PodSlot

log = logging.getLogger(__name__)

T = TypeVar("T")

CHUNK_BYTES = 1 << 16
KV_THREADS = 32
"""Threads for the actor's calls to Ray's KV: each is a round trip to the GCS, slow while a
node is being declared dead, and after a node is lost every pod of a restarted host is
claimed at once (the default pool has a handful of threads on a small machine)."""
DROP_WAIT_S = 10.0
"""How long a fenced pod's turn may take to stop before the pod is closed anyway."""


class PodHost:
    """The pods this actor owns, and the connections gateways have open to them."""

    def __init__(
        self, name: str, *, idle_unload_s: float = 600.0, max_loaded: int | None = None
    ) -> None:
        self.name = name
        self.directory = Directory(RayKV())
        # The pods' own sockets are this process's business: short paths in a private dir.
        self.sockets = Path(tempfile.mkdtemp(prefix=f"pod-{name}-"))
        self.host = Host(
            idle_unload_s=idle_unload_s,
            max_loaded=max_loaded,
            control_path=self.sockets / "host.sock",
            registry_path=self.sockets / "host.registry",
            on_forget=self._shut_down,
        )
        self.fences: dict[str, Fence] = {}
        self._links: dict[str, tuple[asyncio.StreamReader, asyncio.StreamWriter]] = {}
        self._ids = itertools.count(1)
        self._started: asyncio.Task[None] | None = None
        self._taking: dict[str, asyncio.Lock] = {}
        self._dropping: set[asyncio.Future[None]] = set()
        self._die_after_send: tuple[str, Path, str] | None = None
        """Fault injection (:meth:`die_after_next_send`): the pod, its session, the marker."""
        self._kv_pool = ThreadPoolExecutor(KV_THREADS, thread_name_prefix="host-kv")
        self._verifying: dict[str, asyncio.Task[None]] = {}
        """Epoch checks of loaded pods running behind their connections (one per pod)."""

    async def _kv(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """A blocking call to the GCS (the KV) or the session file, on the actor's threads."""
        return await asyncio.get_running_loop().run_in_executor(
            self._kv_pool, partial(call, *args, **kwargs)
        )

    async def _ready(self) -> None:
        if self._started is None:
            self._started = asyncio.ensure_future(self._start())
        await self._started

    async def _start(self) -> None:
        # The fleet's root holds every gateway's sockets (a command that reached one could
        # approve its own calls), the Ray token and the sessions: its pods' sandboxes never
        # see it (their gateways refuse a sandboxed peer too, :mod:`orchestrator.serving.peer`).
        try:
            settings = await self._kv(self.directory.settings)
            self.host.hidden_from_pods = (Path(settings.root),)
        except Exception as exc:  # the GCS briefly away: the pods are served all the same
            log.warning("the fleet's root stays visible to this host's sandboxes: %s", exc)
        await self.host.start()

    # -- ownership ---------------------------------------------------------------------------

    async def acquire(self, pod: str) -> dict[str, Any]:
        """Own the pod (taking its next epoch unless this actor holds the current one) and
        return its row."""
        slot = await self._own(pod)
        return self._row(slot)

    async def _own(self, pod: str, *, check: bool = True) -> PodSlot:
        """The pod's slot, owned under the current epoch (taken now if this host holds an
        older one, or none). ``check`` False (a connection): a pod loaded here is served at
        once and its epoch checked behind it."""
        await self._ready()
        lock = self._taking.setdefault(pod, asyncio.Lock())
        async with lock:
            slot = self.host.slots.get(pod)
            fence = self.fences.get(pod)
            if slot is not None and fence is not None and slot.loaded and not check:
                # Its writes are fenced batch by batch already, and a client reaches this host
                # only as the directory's owner: waiting on the GCS for every connection (a
                # thousand at once after a node is lost) only made every client wait. One
                # that was superseded is dropped as soon as the check says so.
                self._verify_soon(pod, fence)
                return slot
            # The KV calls run on threads: each is a round trip to the GCS, slow while a node
            # is being declared dead, and every pod of this actor shares its loop.
            if slot is not None and fence is not None:
                if await self._kv(self.directory.epochs.current, pod) == fence.epoch:
                    return slot
                await self._drop(pod)  # superseded: another host owns it now
            placement = await self._kv(self.directory.placement, pod)
            if placement is None:
                raise FleetError(f"the fleet has no pod named {pod}")
            node = ray.get_runtime_context().get_node_id()
            machine = socket.gethostname()
            if placement.pinned_machine not in (None, machine):
                # Its host was restarted on another machine (its own is down): the workspace
                # is not here, so the pod is unavailable, not served without its files.
                raise FleetError(
                    f"pod {pod} is pinned to machine {placement.pinned_machine} (its "
                    "workspace is not on the fleet's shared storage) and this host runs on "
                    f"{machine}; it is unavailable while that machine has no live node"
                )
            config = PodConfig.from_portable(placement.config)
            if config.session is None:
                raise FleetError(f"pod {pod} has no session path on shared storage")
            epoch = await self._kv(self.directory.epochs.take, pod, host=self.name)
            fence = Fence(pod=pod, epoch=epoch, store=self.directory.epochs)
            await self._kv(claim_session, config.session, fence, host=self.name)
            slot = await self.host.register(config, self.sockets / f"{pod}.sock", continue_=True)
            slot.fence = fence
            slot.on_fenced = self._fenced
            self.fences[pod] = fence
            placed = placement.model_copy(update={"host": self.name, "epoch": epoch, "node": node})
            await self._kv(self.directory.place, placed)
            return slot

    def _verify_soon(self, pod: str, fence: Fence) -> None:
        """Check the loaded pod's epoch without holding up its connection."""
        if pod not in self._verifying:
            task = asyncio.ensure_future(self._verify(pod, fence))
            self._verifying[pod] = task
            task.add_done_callback(lambda _: self._verifying.pop(pod, None))

    async def _verify(self, pod: str, fence: Fence) -> None:
        try:
            current = await self._kv(self.directory.epochs.current, pod)
        except Exception:  # the GCS is out of reach now: the next connection checks again
            log.info("could not check the epoch of %s", pod, exc_info=True)
            return
        if current != fence.epoch:
            log.warning("pod %s was taken over by another host; dropping it here", pod)
            async with self._taking.setdefault(pod, asyncio.Lock()):
                await self._drop(pod, fenced=fence)

    def _shut_down(self, pod: str) -> None:
        """A client shut the pod down (``shutdown``): it leaves the fleet, as it leaves a
        ``pod host`` (its session file stays; ``pod fleet add`` brings it back)."""
        fence = self.fences.pop(pod, None)
        if fence is None:
            return
        task = asyncio.ensure_future(asyncio.to_thread(self._remove, pod, fence))
        self._dropping.add(task)
        task.add_done_callback(self._dropping.discard)

    def _remove(self, pod: str, fence: Fence) -> None:
        # Only while this host still owns it: a pod another host took over is that host's.
        if self.directory.epochs.current(pod) == fence.epoch:
            self.directory.remove(pod)

    def _fenced(self, slot: PodSlot) -> None:
        """A write of a loaded pod was refused: another host owns it now. Dropped at once,
        not at the next connection: its clients were told why (the ``error`` alert goes out
        before the pod closes their connections) and reach the new owner through a gateway."""
        fence = self.fences.get(slot.name)
        log.warning("pod %s was taken over by another host; dropping it here", slot.name)
        task = asyncio.ensure_future(self._drop(slot.name, fenced=fence))
        self._dropping.add(task)
        task.add_done_callback(self._dropping.discard)

    async def _drop(self, pod: str, *, fenced: Fence | None = None) -> None:
        """Let go of a pod another host took over: close it and forget it. ``fenced``: the
        fence its writes were refused under (only that ownership is dropped, not a newer one
        this host took meanwhile); a turn it runs is stopped first, and nothing is written
        (every write would be refused)."""
        if fenced is not None and self.fences.get(pod) is not fenced:
            return
        slot = self.host.slots.pop(pod, None)
        self.fences.pop(pod, None)
        if slot is None:
            return
        served, slot.served = slot.served, None
        if served is not None:
            if fenced is not None:
                served.controller.task.interrupt()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(served.controller.task.wait_idle(), DROP_WAIT_S)
            with contextlib.suppress(Exception):
                await served.close(unload=fenced is None)
        await slot.unbind()

    async def release(self, pod: str) -> None:
        """Give a pod up (unloaded if loaded); the next host to serve it takes a new epoch."""
        await self._ready()
        slot = self.host.slots.get(pod)
        if slot is not None and slot.loaded:
            await self.host.evict(pod)
        await self._drop(pod)

    async def evict(self, pod: str) -> None:
        """Unload a pod now (it stays owned here)."""
        await self._ready()
        await self.host.evict(pod)

    # -- connections -------------------------------------------------------------------------

    async def open(self, pod: str) -> str:
        """A new connection to the pod (loaded if it is not); its id."""
        slot = await self._own(pod, check=False)
        reader, writer = await asyncio.open_unix_connection(
            str(slot.socket_path), limit=MAX_LINE_BYTES
        )
        link = f"{self.name}:{os.getpid()}:{next(self._ids)}:{pod}"
        self._links[link] = (reader, writer)
        return link

    async def send(self, link: str, data: bytes) -> None:
        """Write client bytes (whole lines) to a connection."""
        _, writer = self._link(link)
        writer.write(data)
        await writer.drain()
        fault = self._die_after_send
        if fault is not None and link.endswith(f":{fault[0]}"):
            await self._die_once_written(fault[1], fault[2])

    # -- fault injection ---------------------------------------------------------------------

    async def die_after_next_send(self, pod: str, marker: str) -> None:
        """Fault injection for the gateway's retry test (nothing else calls it): after the
        next ``send`` to a connection of ``pod``, wait until its session file holds
        ``marker`` (a run's request id), then end this process at once, before ``send``
        returns. The gateway sees a host lost mid-call whose line took effect."""
        slot = await self._own(pod)
        if slot.config.session is None:
            raise FleetError(f"pod {pod} has no session file")
        self._die_after_send = (pod, slot.config.session, marker)

    async def _die_once_written(self, session: Path, marker: str) -> None:
        for _ in range(200):
            if marker.encode() in await asyncio.to_thread(session.read_bytes):
                break
            await asyncio.sleep(0.05)
        os._exit(70)

    async def events(self, link: str) -> AsyncIterator[bytes]:
        """What the pod writes to a connection, a chunk at a time, until it closes it."""
        reader, _ = self._link(link)
        try:
            while data := await reader.read(CHUNK_BYTES):
                yield data
        finally:
            await self.close(link)

    async def close(self, link: str) -> None:
        """Close a connection (the client left)."""
        pair = self._links.pop(link, None)
        if pair is not None:
            pair[1].close()

    def _link(self, link: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        pair = self._links.get(link)
        if pair is None:
            raise FleetError(
                f"connection {link} is gone (its host restarted, or the pod closed it); connect again"
            )
        return pair

    # -- reporting ---------------------------------------------------------------------------

    def _row(self, slot: PodSlot) -> dict[str, Any]:
        row = next(row for row in self.host.rows() if row.name == slot.name)
        fence = self.fences.get(slot.name)
        return {**row.model_dump(), "epoch": fence.epoch if fence else 0, "host": self.name}

    async def info(self) -> dict[str, Any]:
        """This actor: its name, node, process, and a row per pod it owns."""
        await self._ready()
        rows = [self._row(slot) for slot in list(self.host.slots.values())]
        node = ray.get_runtime_context().get_node_id()
        return {
            "name": self.name,
            "node": node,
            "machine": socket.gethostname(),
            "pid": os.getpid(),
            "pods": rows,
        }

    async def stop(self) -> None:
        """Unload every pod it may, shut down the others, and remove its sockets."""
        await self._ready()
        await self.host.detach()
        shutil.rmtree(self.sockets, ignore_errors=True)
