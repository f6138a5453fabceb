"""The pods a host serves: registering, loading, unloading idle ones, its cap, its registry
file, the listing, and leaving once it has no pod of its own (``exit_when_empty``).

:class:`PodSet` is the host without its process: :class:`orchestrator.serving.host.Host` adds
the control socket, the signals and the shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.config.model import PodConfig
from orchestrator.config.paths import default_socket
from orchestrator.serving.host.address import control_socket
from orchestrator.serving.host.children import HostChildLauncher
from orchestrator.serving.host.control import (
    HostError,
    HostListing,
    HostStats,
    PodRow,
)
from orchestrator.serving.host.memory import process_memory, release_unloaded, split_shares
from orchestrator.serving.host.registry import registry_file, write_registry
from orchestrator.serving.host.slot import EvictRefused, PodSlot
from orchestrator.serving.pod import Hosting

__all__ = ["IDLE_EXIT_S", "IDLE_UNLOAD_S", "PodSet"]

log = logging.getLogger(__name__)

IDLE_UNLOAD_S = 600.0
IDLE_EXIT_S = 300.0
"""``host.idle_exit_s``'s default (``orchestrator/config/model.py`` says the same)."""
SWEEP_EVERY_S = 1.0
RELEASE_AFTER_S = 1.0
"""After an eviction, how long the host waits for more before it frees what they held (one
full collection for a burst of evictions, not one each)."""


@dataclass(eq=False)
class PodSet:
    """The pods of one host, each on its own socket, loaded while used."""

    idle_unload_s: float = IDLE_UNLOAD_S
    max_loaded: int | None = None
    control_path: Path = field(default_factory=control_socket)
    registry_path: Path = field(default_factory=registry_file)
    slots: dict[str, PodSlot] = field(default_factory=dict)
    stopped: asyncio.Event = field(default_factory=asyncio.Event)
    exit_when_empty: bool = False
    """Stop once it has had no pod of its own for :attr:`idle_exit_s` (a host the CLI
    started for its pods)."""
    idle_exit_s: float = IDLE_EXIT_S
    """With :attr:`exit_when_empty`: how long it stays up after its last pod of its own was
    shut down, so the next ``pod run`` finds it warm; 0: it leaves at once."""
    baseline_rss_bytes: int | None = None
    """The process's RSS before it loaded any pod (``Host.start``)."""
    hidden_from_pods: tuple[Path, ...] = ()
    """More paths the sandboxes of this host's pods hide (:meth:`hidden_paths`): a fleet
    host's fleet root, with its gateways' sockets."""
    on_forget: Callable[[str], None] | None = None
    """Told the name of a pod a client shut down (the host forgot it): a fleet host drops it
    from the fleet's directory."""
    _left_empty: bool = False
    """It stops because it had no pod of its own left (``exit_when_empty``): the restored
    pods it still serves stay in the registry for the next host."""
    _release: asyncio.TimerHandle | None = None
    _leaving: asyncio.TimerHandle | None = None
    """The idle exit, while one is due (:meth:`_empty_now`)."""

    def hidden_paths(self) -> tuple[Path, ...]:
        """What the sandboxes of this host's pods must not see: its control socket and the
        folder holding it, the sockets of the pods it serves now, and
        :attr:`hidden_from_pods` (a fleet's root)."""
        control = self.control_path
        sockets = (slot.socket_path for slot in self.slots.values())
        return (control, control.parent, *sockets, *self.hidden_from_pods)

    def hosting(self) -> Hosting:
        """What this host gives each pod it loads: its children load into this host, and
        its sandbox hides the host (:meth:`hidden_paths`)."""
        return Hosting(launcher=HostChildLauncher(self.control_path), hidden=self.hidden_paths)

    def _release_soon(self) -> None:
        """Free what evicted pods held, once for a burst of evictions: a second after the
        first of them (:func:`release_unloaded`). Never postponed by later ones: a host at its
        cap evicts on every load, and what it evicted must not pile up meanwhile."""
        if self._release is not None:
            return

        def release() -> None:
            self._release = None
            release_unloaded()

        self._release = asyncio.get_running_loop().call_later(RELEASE_AFTER_S, release)

    # -- pods --------------------------------------------------------------------------------

    async def register(
        self,
        config: PodConfig,
        socket: Path | None,
        *,
        continue_: bool,
        save: bool = True,
        owned: bool = False,
        restored: bool = False,
    ) -> PodSlot:
        """Serve a pod on its socket (it loads at the first connection); ``restored``: one a
        previous host left in the registry (:attr:`PodSlot.restored`)."""
        name = config.pod_name()
        if name in self.slots:
            raise HostError(f"this host already serves a pod named {name}")
        slot = PodSlot(
            config=config,
            socket_path=socket or config.socket or default_socket(name),
            continue_=continue_,
            on_stopped=self._forget,
            owned=owned,
            restored=restored,
            hosting=self.hosting(),
        )
        await slot.bind()
        self.slots[name] = slot
        if not restored:
            self._stay()
        if save:
            self._save_registry()
        return slot

    async def load(
        self, config: PodConfig, socket: Path | None, *, continue_: bool, owned: bool = False
    ) -> PodSlot:
        """Register the pod if it is new, and load it now."""
        slot = self.slots.get(config.pod_name())
        new = slot is None
        if slot is None:
            slot = await self.register(config, socket, continue_=continue_, owned=owned)
        elif owned:
            raise HostError(f"this host already serves a pod named {slot.name}")
        try:
            await slot.load()
        except BaseException:
            if new:  # a pod that cannot load is not kept half-registered
                await slot.unbind()
                self.slots.pop(slot.name, None)
                self._save_registry()
            raise
        self._stay()
        self._save_registry()  # the session is known now
        await self._enforce_cap(keep=slot)
        return slot

    async def evict(self, name: str) -> None:
        """Unload a pod now; :class:`HostError` with the reasons when it may not be."""
        slot = self.slots.get(name)
        if slot is None:
            raise HostError(f"this host serves no pod named {name}")
        try:
            await slot.evict()
        except EvictRefused as exc:
            raise HostError(str(exc)) from None
        self._release_soon()

    async def shut_down(self, slots: list[PodSlot]) -> list[str]:
        """Shut these pods down (those still served), each as ``pod serve`` on SIGTERM, and
        forget them; their names."""
        mine = [slot for slot in slots if self.slots.get(slot.name) is slot]
        await asyncio.gather(*(slot.shutdown() for slot in mine), return_exceptions=True)
        for slot in mine:
            self._forget(slot)  # an unloaded one has no pod to say it stopped
        return [slot.name for slot in mine]

    def rows(self) -> list[PodRow]:
        """One row per pod, loaded or not (without memory shares: :meth:`listing`)."""
        now_ms, now = time.time() * 1000, time.monotonic()
        rows = []
        for slot in self.slots.values():
            served = slot.served
            rows.append(
                PodRow(
                    name=slot.name,
                    workspace=str(slot.config.workspace),
                    socket=str(slot.socket_path),
                    session=str(slot.config.session) if slot.config.session else None,
                    loaded=served is not None,
                    state=served.controller.state_id if served is not None else "unloaded",
                    parent=slot.config.subpods.parent or None,
                    clients=slot.clients,
                    last_active_ms=int(now_ms - (now - slot.last_active) * 1000),
                    restored=slot.restored,
                    cost_usd=served.controller.cost_usd() if served is not None else slot.cost_usd,
                )
            )
        return rows

    def listing(self) -> HostListing:
        """The host's memory and a row per pod, each loaded one with its estimated share of
        what the host grew by since it started (``orchestrator/serving/host/memory.py``)."""
        rows = self.rows()
        memory = process_memory()
        if memory is not None and self.baseline_rss_bytes is not None:
            weights = {
                slot.name: _file_size(slot.served.pod.session_path)
                for slot in self.slots.values()
                if slot.served is not None
            }
            shares = split_shares(memory.rss_bytes - self.baseline_rss_bytes, weights)
            rows = [
                row.model_copy(update={"rss_share_bytes": shares.get(row.name)}) for row in rows
            ]
        stats = HostStats(
            pid=os.getpid(),
            rss_bytes=memory.rss_bytes if memory is not None else None,
            pss_bytes=memory.pss_bytes if memory is not None else None,
            baseline_rss_bytes=self.baseline_rss_bytes,
            loaded=sum(row.loaded for row in rows),
            registered=len(rows),
        )
        return HostListing(host=stats, pods=rows)

    def _forget(self, slot: PodSlot) -> None:
        if self.slots.get(slot.name) is slot:
            del self.slots[slot.name]
            self._save_registry()
            if self.on_forget is not None:
                self.on_forget(slot.name)
            if self._empty():
                self._empty_now()

    # -- leaving when empty -------------------------------------------------------------------

    def _empty(self) -> bool:
        """Whether a host that leaves when empty has no pod of its own left. Restored pods
        nobody used do not count: after a crash they would keep every later host running
        although none of its own pods is left."""
        return self.exit_when_empty and all(s.restored for s in self.slots.values())

    def _empty_now(self) -> None:
        """It has no pod of its own: leave after :attr:`idle_exit_s` unless one comes."""
        if self.idle_exit_s <= 0:
            self._leave()
            return
        if self._leaving is None:
            log.info("no pod left; leaving in %.0f s unless one is loaded", self.idle_exit_s)
            loop = asyncio.get_running_loop()
            self._leaving = loop.call_later(self.idle_exit_s, self._leave_if_still_empty)

    def _stay(self) -> None:
        """A pod of its own came (registered, loaded, or a restored one used): no idle exit."""
        if self._leaving is not None:
            self._leaving.cancel()
            self._leaving = None
            log.info("a pod came; staying")

    def _leave_if_still_empty(self) -> None:
        self._leaving = None
        # A restored pod loaded meanwhile is the host's own now (and is loaded).
        if self._empty() and not any(s.loaded for s in self.slots.values()):
            self._leave()

    def _leave(self) -> None:
        self._left_empty = True
        self.stopped.set()

    async def _sweep(self) -> None:
        """Unload pods idle for ``idle_unload_s``, checked every second."""
        while True:
            await asyncio.sleep(SWEEP_EVERY_S)
            for slot in list(self.slots.values()):
                if slot.loaded and slot.idle_for() >= self.idle_unload_s:
                    with contextlib.suppress(EvictRefused):
                        await slot.evict()
                        log.info("unloaded idle pod %s", slot.name)
                        self._release_soon()

    async def _enforce_cap(self, keep: PodSlot) -> None:
        """Over ``max_loaded``: unload the least recently used pods that may be unloaded."""
        if self.max_loaded is None:
            return
        loaded = sorted(
            (s for s in self.slots.values() if s.loaded and s is not keep),
            key=lambda s: s.last_active,
        )
        excess = len(loaded) + 1 - self.max_loaded
        for slot in loaded:
            if excess <= 0:
                break
            try:
                await slot.evict()
                excess -= 1
            except EvictRefused:
                continue
        self._release_soon()

    # -- the registry file -------------------------------------------------------------------

    def _save_registry(self) -> None:
        entries = [
            {"socket": str(s.socket_path), "config": s.config.portable()}
            for s in self.slots.values()
            if not s.owned
        ]
        write_registry(self.registry_path, entries)


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
