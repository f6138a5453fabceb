"""Finding live pods and starting one in the background for a workspace."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from cli.errors import CliError
from orchestrator.config.paths import (
    UnsafePathError,
    is_pod_name,
    open_private_log,
    runtime_dir,
    safe_pod_name,
)

if TYPE_CHECKING:
    from cli.acp import LaunchedPod
    from orchestrator.config.model import PodConfig
    from orchestrator.serving.host import HostListing, HostStats, PodRow


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
        from orchestrator.serving.server import socket_is_live

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


class _Node(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def parent(self) -> str: ...


NodeT = TypeVar("NodeT", bound=_Node)


def tree_order(pods: list[NodeT]) -> list[NodeT]:
    """Pods with each one's children (and theirs) right after it; orphans at the end."""
    by_parent: dict[str, list[NodeT]] = {}
    for pod in pods:
        by_parent.setdefault(pod.parent, []).append(pod)
    ordered: list[NodeT] = []

    def add(pod: NodeT) -> None:
        ordered.append(pod)
        for child in by_parent.get(pod.name, []):
            add(child)

    for pod in by_parent.get("", []):
        add(pod)
    ordered += [pod for pod in pods if pod not in ordered]
    return ordered


@dataclass(frozen=True)
class PodListing:
    """One row of ``pod ls``: a pod of the running host (loaded or not), or a pod process of
    its own."""

    name: str
    workspace: str
    socket: str
    pid: int
    parent: str
    loaded: bool
    state: str
    """The machine state; ``unloaded`` for a host's pod not in memory, ``unreachable`` for a
    process that did not answer."""
    clients: int | None
    """Clients attached (a host's pods; None for a process: asking would be one more)."""
    last_active_ms: int | None
    """When a client last left it or it last did anything (a host's pods)."""
    rss_share_bytes: int | None
    """A loaded host pod's estimated part of the host's memory (docs/host.md)."""
    in_host: bool

    @classmethod
    def of_host(cls, row: PodRow, pid: int) -> PodListing:
        """A row of the host's ``list`` reply (``pid``: the host's)."""
        return cls(
            name=row.name, workspace=row.workspace, socket=row.socket, pid=pid,
            parent=row.parent or "", loaded=row.loaded, state=row.state, clients=row.clients,
            last_active_ms=row.last_active_ms, rss_share_bytes=row.rss_share_bytes,
            in_host=True,
        )  # fmt: skip

    def as_json(self) -> dict[str, object]:
        """The row as ``pod ls --json`` prints it (``status`` is ``state``, kept for scripts
        written before the host)."""
        return {
            "name": self.name,
            "workspace": self.workspace,
            "loaded": self.loaded,
            "state": self.state,
            "status": self.state,
            "clients": self.clients,
            "last_active_ms": self.last_active_ms,
            "rss_share_bytes": self.rss_share_bytes,
            "pid": self.pid,
            "socket": self.socket,
            "parent": self.parent or None,
            "host": self.in_host,
        }


def host_listing() -> HostListing | None:
    """What the running host of this user serves; None when none runs (or it did not
    answer)."""
    import asyncio

    from orchestrator.serving.host import HostError, HostListing, ask_host, host_running

    if not host_running():
        return None
    try:
        return HostListing.model_validate(asyncio.run(ask_host("list", timeout=5.0)))
    except (HostError, ValueError):
        return None  # a host that stopped meanwhile: its pods' info files say the rest


def _process_state(socket: Path) -> str:
    from orchestrator.serving.client import PodClient

    async def ask() -> str:
        client = await PodClient.connect(socket)
        try:
            return (await client.status(timeout=2.0)).status
        finally:
            await client.close()

    import asyncio

    try:
        return asyncio.run(ask())
    except Exception:  # any failure to answer is the same fact for a listing
        return "unreachable"


def live_pods() -> tuple[list[PodListing], HostStats | None]:
    """Every pod of this user, its children right after it, and the host's memory when a
    host runs. The host's pods come from its ``list`` reply, so no unloaded pod is loaded by
    being looked at; other pods (``pod serve`` processes, children of ``task`` calls) from
    their info files, each asked its state."""
    listing = host_listing()
    rows: list[PodListing] = []
    in_host: set[str] = set()
    if listing is not None:
        for row in listing.pods:
            in_host.add(row.socket)
            rows.append(PodListing.of_host(row, listing.host.pid))
    for pod in list_pods():
        if str(pod.socket) in in_host or not pod.alive:
            continue
        rows.append(
            PodListing(
                name=pod.name, workspace=str(pod.workspace), socket=str(pod.socket),
                pid=pod.pid, parent=pod.parent, loaded=True, state=_process_state(pod.socket),
                clients=None, last_active_ms=None, rss_share_bytes=None, in_host=False,
            )
        )  # fmt: skip
    return tree_order(rows), listing.host if listing is not None else None


def find_pod_for(workspace: Path) -> PodInfo | None:
    """A live pod serving this workspace, if any: the one under the workspace's own name
    first, when a pod started under another name (``pod chat --name``, a fork's) serves it
    beside it."""
    resolved = workspace.resolve()
    # A child pod shares its parent's workspace; the workspace's pod is the parent.
    found = [p for p in list_pods() if p.workspace == resolved and not p.parent and p.alive]
    usual = _usual_names(resolved)
    return next((p for p in found if p.name in usual), found[0] if found else None)


def _live_pod(workspace: Path, name: str | None) -> PodInfo | None:
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


def start_in_background(
    args: list[str], log_path: Path, cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    """Start a process that outlives the caller (and ignores its Ctrl-C), logging privately."""
    try:
        log_fd = open_private_log(log_path)
    except UnsafePathError as exc:
        raise CliError(str(exc)) from None
    with os.fdopen(log_fd, "ab") as log:
        return subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            cwd=str(cwd) if cwd is not None else None,
        )


def spawn_pod(
    workspace: Path,
    *,
    extra_args: list[str] | None = None,
    timeout_s: float = 15.0,
    name: str | None = None,
) -> PodInfo:
    """Start ``pod serve`` for a workspace as a background process that outlives the caller
    (under ``name``, else the workspace's own name)."""
    named = name
    name = name or default_name(workspace)
    base = runtime_dir()
    socket = base / f"{name}.sock"
    log_path = base / f"{name}.log"
    args = [
        sys.executable,
        "-m",
        "cli",
        "serve",
        "--workspace",
        str(workspace.resolve()),
        "--name",
        name,
        "--socket",
        str(socket),
        "--log-file",
        str(log_path),
        *(extra_args or []),
    ]
    proc = start_in_background(args, log_path, cwd=workspace.resolve())
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pod = _live_pod(workspace, named)
        if pod is not None:
            return pod
        if proc.poll() is not None:
            raise CliError(f"the pod exited at start: {_last_line(log_path)} (log: {log_path})")
        time.sleep(0.05)
    raise CliError(f"the pod did not start within {timeout_s:.0f} s (log: {log_path})")


def _last_line(log_path: Path) -> str:
    """The last line a process that failed at start wrote: its one-line error, without the
    ``pod: error:`` it began with (the message that quotes it begins so already)."""
    lines = log_path.read_text(errors="replace").strip().splitlines()
    return lines[-1].removeprefix("pod: error: ") if lines else "no output"


def uses_host(workspace: Path, no_host: bool) -> bool:
    """Whether pods for this workspace go into this user's ``pod host``: not with
    ``--no-host``, ``POD_NO_HOST=1`` or ``[host] enabled = false``."""
    from orchestrator.config.loading import ConfigError, load_config

    if no_host or os.environ.get("POD_NO_HOST") == "1":
        return False
    try:
        return load_config(workspace).host.enabled
    except ConfigError as exc:
        raise CliError(str(exc)) from None


def start_pod(workspace: Path, options: StartOptions, session: Path | None) -> PodInfo:
    """Start the workspace's pod: in this user's ``pod host`` (started if none runs) unless
    :func:`uses_host` says otherwise; then as a ``pod serve`` process."""
    if not uses_host(workspace, options.no_host):
        return spawn_pod(workspace, extra_args=options.serve_args(session), name=options.name)
    return load_in_host(workspace, options, session)


def host_config(
    workspace: Path,
    options: StartOptions,
    session: Path | None,
    *,
    name: str,
    script: Path | None = None,
    mcp_servers: dict[str, Any] | None = None,
) -> PodConfig:
    """The whole configuration of a pod the CLI loads into the host: what ``pod serve`` with
    these options would run (the host has no command line to read)."""
    from cli.commands.serve import start_overrides
    from orchestrator.config.loading import ConfigError, load_config

    try:
        return load_config(
            workspace,
            name=name,
            session=session.resolve() if session is not None else None,
            **start_overrides(
                provider=options.provider,
                model=options.model,
                allow_bash=options.allow_bash,
                permission_mode=options.permission_mode,
                thinking=options.thinking,
                effort=options.effort,
            ),
            scripted_script=script.resolve() if script is not None else None,
            mcp={"servers": mcp_servers} if mcp_servers else None,
        )
    except ConfigError as exc:
        raise CliError(str(exc)) from None


def load_in_host(workspace: Path, options: StartOptions, session: Path | None) -> PodInfo:
    """Load the workspace's pod into the running host (starting one first when none runs)."""
    import asyncio

    from orchestrator.serving.host import HostError, ask_host

    name = options.name or default_name(workspace)
    config = host_config(workspace, options, session, name=name)
    ensure_host()
    params = {
        "config": config.portable(),
        "continue": session is None and not options.new,
        "socket": str(runtime_dir() / f"{name}.sock"),
        "provider_settings": _provider_settings(),
    }
    try:
        asyncio.run(ask_host("load", params))
    except HostError as exc:
        raise CliError(str(exc)) from None
    pod = _live_pod(workspace, options.name)
    if pod is None:
        raise CliError(f"the pod host loaded {name} but it does not answer on its socket")
    return pod


def _provider_settings() -> dict[str, Any]:
    """This shell's ``ANTHROPIC_*`` settings as salted digests, for the host to compare with
    its own (``orchestrator/serving/host/settings.py``): never the values."""
    from orchestrator.serving.host.settings import provider_settings

    return provider_settings().model_dump()


def refuse_other_host_settings(live: PodInfo) -> None:
    """Refuse to join a pod the host serves when the host's provider settings are not this
    shell's: the prompt would go to the host's endpoint, with the host's key."""
    import asyncio

    from orchestrator.serving.host import HostError, ask_host, host_running
    from orchestrator.serving.host.settings import mismatch_message

    if not host_running():
        return  # a pod process of its own (`pod serve`): started by the user as it is
    params = {"provider_settings": _provider_settings(), "socket": str(live.socket)}
    try:
        differ = asyncio.run(ask_host("check", params))
    except HostError:
        return  # the host left meanwhile (its pods with it), or predates the check
    if differ:
        raise CliError(mismatch_message([str(name) for name in differ], pod=live.name))


HOST_START_TIMEOUT_S = 15.0


def ensure_host() -> None:
    """Start this user's ``pod host`` in the background unless one runs; it stops by itself
    once its last pod was shut down."""
    from orchestrator.serving.host import host_running

    if host_running():
        return
    log_path = runtime_dir() / "host.log"
    args = [sys.executable, "-m", "cli", "host", "--exit-when-empty", "--log-file", str(log_path)]
    proc = start_in_background(args, log_path)
    deadline = time.monotonic() + HOST_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if host_running():
            return
        if proc.poll() is not None and not host_running():
            raise CliError(
                f"the pod host exited at start: {_last_line(log_path)} (log: {log_path})"
            )
        time.sleep(0.05)
    raise CliError(f"the pod host did not start within {HOST_START_TIMEOUT_S:.0f} s ({log_path})")


@dataclass(frozen=True)
class StartOptions:
    """How ``pod chat`` and ``pod run`` start a pod when the workspace has none running."""

    new: bool = False
    """Start a new session instead of continuing the latest one that has content."""
    session: str | None = None
    """A session name from ``pod sessions ls``, or a path."""
    model: str | None = None
    provider: str | None = None
    allow_bash: bool | None = None
    permission_mode: str | None = None
    thinking: str | None = None
    effort: str | None = None
    no_host: bool = False
    """Start a ``pod serve`` process for the pod even where a host would serve it."""
    name: str | None = None
    """The pod's name: the pod of that name is the one used (or started), beside any other
    pod of the workspace (a fork continued while the original's pod runs)."""

    def settings_given(self) -> list[str]:
        """The options given that only a starting pod can apply."""
        given = [
            ("--model", self.model),
            ("--provider", self.provider),
            ("--permission-mode", self.permission_mode),
            ("--thinking", self.thinking),
            ("--effort", self.effort),
        ]
        names = [name for name, value in given if value is not None]
        if self.allow_bash is not None:
            names.append("--allow-bash" if self.allow_bash else "--no-allow-bash")
        return names

    def serve_args(self, session: Path | None) -> list[str]:
        """``pod serve`` options for a pod started with these options (``session`` resolved)."""
        args: list[str] = []
        if session is not None:
            args += ["--session", str(session.resolve())]
        elif not self.new:
            args.append("--continue")
        if self.model is not None:
            args += ["--model", self.model]
        if self.provider is not None:
            args += ["--provider", self.provider]
        if self.allow_bash is not None:
            args.append("--allow-bash" if self.allow_bash else "--no-allow-bash")
        if self.permission_mode is not None:
            args += ["--permission-mode", self.permission_mode]
        if self.thinking is not None:
            args += ["--thinking", self.thinking]
        if self.effort is not None:
            args += ["--effort", self.effort]
        return args


def connect_or_start(workspace: Path, options: StartOptions) -> tuple[PodInfo, list[str]]:
    """The workspace's live pod, or one started with ``options``; plus notices for the user.

    A live pod keeps its settings, so options it cannot apply become a notice. Options that
    choose the conversation (``--new``, another ``--session``) are errors instead: the prompt
    must not land in a conversation the user did not ask for.
    """
    # The session store and the permission rules are imported only when an option needs
    # them: `pod run` on a running pod must reach it fast (docs/performance.md).
    if options.permission_mode is not None:
        from typing import get_args

        from orchestrator.capabilities.permissions import Mode

        if options.permission_mode not in (modes := get_args(Mode)):
            raise CliError(
                f"--permission-mode {options.permission_mode!r} is not a mode; "
                f"choose one of {', '.join(modes)}"
            )
    if options.name is not None and not is_pod_name(options.name):
        raise CliError(f"--name {options.name!r} is not a pod name (letters, digits, . _ -)")
    session = None
    if options.session:
        from orchestrator.adapters.session import SessionError, resolve_session

        try:
            session = resolve_session(workspace, options.session)
        except SessionError as exc:
            raise CliError(str(exc)) from None
    live = _live_pod(workspace, options.name)
    if live is not None and live.workspace != workspace.resolve():
        raise CliError(f"pod {live.name} serves {live.workspace}; choose another --name")
    if live is None:
        return start_pod(workspace, options, session), []
    stop = f"stop it first with `pod shutdown {live.name}`"
    current = Path(live.session).stem if live.session else "its session"
    if options.new and live.session and _has_content(Path(live.session)):
        raise CliError(f"pod {live.name} already runs here on session {current}; {stop}")
    if session is not None and Path(live.session).resolve() != session.resolve():
        raise CliError(
            f"pod {live.name} already runs here on session {current}, not {session.stem}; {stop}"
        )
    refuse_other_host_settings(live)
    ignored = options.settings_given()
    if not ignored:
        return live, []
    notice = (
        f"pod {live.name} was already running, so {', '.join(ignored)} "
        f"{'does' if len(ignored) == 1 else 'do'} not apply: to change "
        f"{'it' if len(ignored) == 1 else 'them'}, `pod shutdown {live.name}` and start again"
    )
    return live, [notice]


def _has_content(session: Path) -> bool:
    from orchestrator.adapters.session import has_content

    return has_content(session)


POD_STOP_GRACE_S = 10.0
"""How long a pod that ``pod acp`` started has to shut down cleanly when ``pod acp`` ends
without asking it to (a signal, a kill -9) before it is killed."""


async def launch_serve_process(
    workspace: Path,
    session: Path | None,
    *,
    name: str,
    serve_args: list[str],
    stdin_data: bytes | None = None,
    timeout_s: float = 15.0,
) -> LaunchedPod:
    """Start ``pod serve`` for a workspace as a child process (``pod acp``'s pods).

    ``session`` names the session file to continue; None starts a new one. ``stdin_data`` is
    written to the pod's stdin, then closed (what must not be on a command line). The pod's
    output goes to a private log in the runtime dir. The pod is a process of its own, so it and
    the caller each get a core; the caller shuts it down and then calls ``stop``. It runs under
    a supervisor (``orchestrator/adapters/procs``), so it stops when the caller dies, even by kill -9.
    """
    import asyncio

    from cli.acp import LaunchedPod, PodLaunchError
    from orchestrator.adapters.procs import Supervision
    from orchestrator.serving.launch import LaunchError, start_serve_process

    base = runtime_dir()
    args = ["--name", name, *serve_args]
    if session is not None:
        args += ["--session", str(session.resolve())]
    try:
        started = await start_serve_process(
            workspace,
            socket=base / f"{name}.sock",
            log_path=base / f"{name}.log",
            serve_args=args,
            supervision=Supervision(grace_s=POD_STOP_GRACE_S, main_first=True),
            stdin_data=stdin_data,
            timeout_s=timeout_s,
        )
    except LaunchError as exc:
        raise PodLaunchError(str(exc)) from None
    proc = started.proc

    async def stop() -> None:
        try:
            await asyncio.wait_for(asyncio.shield(proc.process.wait()), 30)
        except TimeoutError:
            await proc.close()

    return LaunchedPod(socket=started.socket, stop=stop)


async def launch_in_host(
    workspace: Path,
    session: Path | None,
    *,
    name: str,
    options: StartOptions,
    script: Path | None = None,
    mcp_servers: dict[str, Any] | None = None,
) -> LaunchedPod:
    """Load a pod for ``pod acp`` into this user's host (started if none runs), owned by a
    control connection that ``pod acp`` keeps open: the host shuts the pod down when it is
    released or when that connection closes, so the pod never outlives ``pod acp``, even
    after a kill -9. ``session`` names the session file to continue; None starts a new one.

    The editor's MCP servers (their headers and env hold secrets) travel in the request on
    the host's private socket, never on a command line, and an owned pod is never written to
    the host's registry.
    """
    import asyncio

    from cli.acp import LaunchedPod, PodLaunchError
    from orchestrator.serving.host import HostConnection, HostError

    try:
        config = host_config(
            workspace, options, session, name=name, script=script, mcp_servers=mcp_servers
        )
        await asyncio.to_thread(ensure_host)
    except CliError as exc:
        raise PodLaunchError(str(exc)) from None
    socket = runtime_dir() / f"{name}.sock"
    params = {
        "config": config.portable(),
        "continue": False,
        "socket": str(socket),
        "owned": True,
        "provider_settings": _provider_settings(),
    }
    try:
        connection = await HostConnection.open()
    except HostError as exc:
        raise PodLaunchError(str(exc)) from None
    try:
        await connection.request("load", params)
    except HostError as exc:
        await connection.close()
        raise PodLaunchError(f"the pod host could not load {name}: {exc}") from None

    async def stop() -> None:
        # After the pod was sent `shutdown`: wait until the host has shut it down and
        # forgotten it (or does so now), then let the connection go.
        try:
            await connection.request("release", timeout=POD_STOP_GRACE_S + 30)
        except HostError:
            pass  # the host is gone: so is the pod
        finally:
            await connection.close()

    return LaunchedPod(socket=socket, stop=stop)
