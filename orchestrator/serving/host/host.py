"""``pod host``: one process serving many pods, each on its own socket, loaded while used and
unloaded to its session file when idle."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import functools
import gc
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from orchestrator.config.model import PodConfig
from orchestrator.config.paths import default_socket
from orchestrator.errors import OrchestratorError
from orchestrator.protocol import MAX_LINE_BYTES
from orchestrator.serving.host.control import (
    CheckParams,
    EvictParams,
    HostError,
    HostListing,
    HostReply,
    HostRequest,
    HostStats,
    LoadParams,
    PodRow,
    control_socket,
    forbidden_reply,
)
from orchestrator.serving.host.memory import process_memory, split_shares
from orchestrator.serving.host.registry import read_registry, registry_file, write_registry
from orchestrator.serving.host.settings import (
    ProviderSettings,
    differing_settings,
    mismatch_message,
    uses_provider_env,
)
from orchestrator.serving.host.slot import EvictRefused, PodSlot
from orchestrator.serving.peer import admit_peer
from orchestrator.serving.pod import STOP_SIGNALS, prepare_process
from orchestrator.serving.server import bind_socket

log = logging.getLogger(__name__)

IDLE_UNLOAD_S = 600.0
SWEEP_EVERY_S = 1.0


RELEASE_AFTER_S = 1.0
"""After an eviction, how long the host waits for more before it frees what they held (one
full collection for a burst of evictions, not one each)."""


def release_unloaded() -> None:
    """Free what unloaded pods held. A loaded pod's objects are frozen out of the collector
    (``open_pod``: walking millions of history objects stalls every pod of the process), so
    their cycles are only ever freed here: unfreeze, collect, freeze what is still alive."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    _trim_heap()


def _trim_heap() -> None:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``).

    An unloaded pod's memory returns to the allocator, not to the system: its arenas keep the
    freed pages, so a host that loaded a thousand sessions once stays that big. Trimming after
    a burst of evictions returns them; elsewhere (musl, macOS) it is skipped.
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Any:
    """libc's ``malloc_trim``, looked up once (``find_library`` runs a program), or None."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    return trim


_serving: list[Host] = []
"""The host this process is, while it is one (:func:`serving_host`)."""


def serving_host() -> Path | None:
    """The control socket of the host running in this process, if it is a host: a pod it
    serves loads its ``task`` children into it."""
    return _serving[-1].control_path if _serving else None


def set_serving_host(host: Host | None) -> None:
    """Say that this process is now ``host`` (None: no more)."""
    _serving.clear()
    if host is not None:
        _serving.append(host)


def hidden_from_pods() -> tuple[Path, ...]:
    """What the sandboxes of the pods this process hosts must not see: its control socket and
    the folder holding it, the sockets of the pods it serves now, and the host's
    :attr:`Host.hidden_from_pods` (a fleet's root). Empty in a process that is no host."""
    if not _serving:
        return ()
    host = _serving[-1]
    control = host.control_path
    sockets = (slot.socket_path for slot in host.slots.values())
    return (control, control.parent, *sockets, *host.hidden_from_pods)


@dataclass(eq=False)
class Host:
    """The pods of one host process, and its control socket."""

    idle_unload_s: float = IDLE_UNLOAD_S
    max_loaded: int | None = None
    control_path: Path = field(default_factory=control_socket)
    registry_path: Path = field(default_factory=registry_file)
    slots: dict[str, PodSlot] = field(default_factory=dict)
    stopped: asyncio.Event = field(default_factory=asyncio.Event)
    exit_when_empty: bool = False
    """Stop once the last pod was shut down (a host the CLI started for its pods)."""
    baseline_rss_bytes: int | None = None
    """The process's RSS before it loaded any pod (:meth:`start`)."""
    hidden_from_pods: tuple[Path, ...] = ()
    """More paths the sandboxes of this host's pods hide (:func:`hidden_from_pods`): a fleet
    host's fleet root, with its gateways' sockets."""
    on_forget: Callable[[str], None] | None = None
    """Told the name of a pod a client shut down (the host forgot it): a fleet host drops it
    from the fleet's directory."""
    _left_empty: bool = False
    """It stops because its last pod of its own was shut down (``exit_when_empty``): the
    restored pods it still serves stay in the registry for the next host."""
    _control: asyncio.Server | None = None
    _sweeper: asyncio.Task[None] | None = None
    _release: asyncio.TimerHandle | None = None
    _connections: dict[asyncio.StreamWriter, asyncio.Task[Any]] = field(default_factory=dict)
    """Open control connections (``pod acp``'s among them) and the tasks serving them."""

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

    async def start(self) -> None:
        """Listen for control requests and bind the sockets of the pods a previous host of
        this user served (they load, from their sessions, when a client connects)."""
        prepare_process()
        baseline = process_memory()
        self.baseline_rss_bytes = baseline.rss_bytes if baseline is not None else None
        # First: a second host is refused here, so the entries of the registry are those of
        # a host that is gone (its control socket stale), killed or detached.
        control = bind_socket(self.control_path)
        for entry in read_registry(self.registry_path):
            try:
                config = PodConfig.from_portable(entry["config"])
                await self.register(
                    config, Path(entry["socket"]), continue_=True, save=False, restored=True
                )
            except Exception as exc:
                # One bad entry (its socket live again, served by another process) must not
                # keep the others down.
                log.warning("could not serve %s again: %s", entry.get("socket"), exc)
        if self.slots:
            log.info(
                "serving again %d pod(s) a previous host left; until a client uses one, "
                "they do not keep this host running",
                len(self.slots),
            )
        self._save_registry()
        # Only now answered: a client that finds the host up finds every pod of it too.
        # A list of a thousand pods, or a configuration with many MCP servers, is one line.
        self._control = await asyncio.start_unix_server(
            self._serve_control, sock=control, limit=MAX_LINE_BYTES
        )
        self._sweeper = asyncio.create_task(self._sweep())
        set_serving_host(self)

    def install_signals(self) -> None:
        """Stop cleanly on SIGTERM, SIGINT and SIGHUP (the host owns the process's signals)."""
        loop = asyncio.get_running_loop()
        for sig in STOP_SIGNALS:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.stopped.set)

    async def serve_forever(self) -> None:
        """Until asked to stop; then shut every pod down."""
        await self.stopped.wait()
        await self.close()

    def _stop_listening(self) -> None:
        """No more control requests, no more idle sweeps."""
        if serving_host() == self.control_path:
            set_serving_host(None)
        if self._sweeper is not None:
            self._sweeper.cancel()
        if self._control is not None:
            self._control.close()
            with contextlib.suppress(OSError):
                self.control_path.unlink()

    async def close(self) -> None:
        """Shut down every pod and stop listening. A host leaving with its last pod of its
        own (``exit_when_empty``) keeps the restored pods nobody used registered instead."""
        self._stop_listening()
        kept = [s for s in self.slots.values() if s.restored] if self._left_empty else []
        slots = [s for s in self.slots.values() if s not in kept]
        await asyncio.gather(*(slot.shutdown() for slot in slots), return_exceptions=True)
        for slot in kept:  # not loaded: nothing of theirs to shut down, only their sockets
            await slot.unbind()
        self.slots = {slot.name: slot for slot in kept}
        if kept:
            self._save_registry()
        else:
            with contextlib.suppress(OSError):
                self.registry_path.unlink()
        self.slots.clear()
        await self._end_connections()
        for sig in STOP_SIGNALS:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                asyncio.get_running_loop().remove_signal_handler(sig)

    async def detach(self) -> None:
        """Stop serving but keep the pods registered: each is unloaded (shut down when it may
        not be), and the next host of this user binds them again (an upgrade, a restart)."""
        self._stop_listening()
        self._save_registry()
        for slot in list(self.slots.values()):
            try:
                await slot.evict()
            except EvictRefused:
                await slot.shutdown()
            await slot.unbind()
        self.slots.clear()
        await self._end_connections()

    async def _end_connections(self) -> None:
        """Close the open control connections and let their tasks end on their own: a task
        still waiting on one when the loop stops is cancelled, and asyncio's stream callback
        (3.11) logs that cancellation as a traceback in host.log."""
        for writer in list(self._connections):
            writer.close()
        tasks = list(self._connections.values())
        if tasks:
            await asyncio.wait(tasks, timeout=10.0)

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
        )
        await slot.bind()
        self.slots[name] = slot
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
            # Restored pods nobody used do not count: after a crash they would keep every
            # later host running although none of its own pods is left.
            if self.exit_when_empty and all(s.restored for s in self.slots.values()):
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

    # -- the control socket ------------------------------------------------------------------

    async def _serve_control(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        # A sandboxed command must never load a pod here (one configured by it, unsandboxed).
        if await admit_peer(writer, server="the pod host", refusal=forbidden_reply) is None:
            return
        owned: list[PodSlot] = []
        """Pods this connection loaded with ``owned``: they end with it."""
        task = asyncio.current_task()
        if task is not None:
            self._connections[writer] = task
        try:
            while line := await reader.readline():
                reply = await self._answer(line, owned)
                writer.write(reply.model_dump_json().encode() + b"\n")
                await writer.drain()
                if reply.ok and reply.data == "stopping":
                    self.stopped.set()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._connections.pop(writer, None)
            writer.close()
            if owned:  # the owner is gone, however it ended (a kill -9 included)
                await self.shut_down(owned)

    async def _answer(self, line: bytes, owned: list[PodSlot]) -> HostReply:
        try:
            request = HostRequest.model_validate_json(line)
        except ValidationError as exc:
            return HostReply(ok=False, error=f"not a host request: {exc.errors()[0]['msg']}")
        try:
            data = await self._dispatch(request, owned)
        except (ValidationError, OSError, OrchestratorError) as exc:  # a pod's setup error too
            return HostReply(id=request.id, ok=False, error=str(exc))
        except Exception as exc:  # one bad request must not take the host down
            log.exception("host request %s failed", request.method)
            return HostReply(id=request.id, ok=False, error=f"{type(exc).__name__}: {exc}")
        return HostReply(id=request.id, ok=True, data=data)

    async def _dispatch(self, request: HostRequest, owned: list[PodSlot]) -> Any:
        if request.method == "list":
            return self.listing().model_dump()
        if request.method == "evict":
            await self.evict(EvictParams.model_validate(request.params).name)
            return None
        if request.method == "release":
            names = await self.shut_down(owned)
            owned.clear()
            return names
        if request.method == "stop":
            return "stopping"
        if request.method == "check":
            check = CheckParams.model_validate(request.params)
            return self.settings_differ(check.provider_settings, Path(check.socket))
        params = LoadParams.model_validate(request.params)
        config = PodConfig.from_portable(params.config)
        socket = Path(params.socket) if params.socket else None
        if params.provider_settings is not None:
            self._refuse_other_settings(params.provider_settings, config)
        if request.method == "register":
            if params.owned:
                # An owned pod is one its owner is using now: that is a load.
                raise HostError("register takes no owned pods (load them)")
            slot = await self.register(config, socket, continue_=params.continue_)
            return next(row.model_dump() for row in self.rows() if row.name == slot.name)
        slot = await self.load(config, socket, continue_=params.continue_, owned=params.owned)
        if params.owned:
            owned.append(slot)
        return next(row.model_dump() for row in self.rows() if row.name == slot.name)

    def settings_differ(self, theirs: ProviderSettings, socket: Path) -> list[str]:
        """Which provider settings of a client the pod served on ``socket`` would not use (the
        host's own environment is what its pods use): none when no pod is served there."""
        slot = next((s for s in self.slots.values() if s.socket_path == socket), None)
        if slot is None or not uses_provider_env(slot.config):
            return []
        return differing_settings(theirs)

    def _refuse_other_settings(self, theirs: ProviderSettings, config: PodConfig) -> None:
        """A client must never have its prompt sent with the host's endpoint and key while it
        believes its own are used: refused, with what to do (``orchestrator/serving/host/settings.py``)."""
        slot = self.slots.get(config.pod_name())
        if not uses_provider_env(slot.config if slot is not None else config):
            return
        names = differing_settings(theirs)
        if names:
            raise HostError(mismatch_message(names, pod=slot.name if slot is not None else None))


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


async def run_host(host: Host) -> None:
    """Start the host, serve until a signal or ``stop``, then shut every pod down."""
    await host.start()
    host.install_signals()
    await host.serve_forever()
