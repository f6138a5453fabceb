"""Starting a workspace's pod for ``pod chat`` and ``pod run``: loaded into this user's pod
host (started if none runs), or as a ``pod serve`` process of its own; or joining the pod
that runs already."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.errors import CliError
from cli.pods.discovery import PodInfo, default_name, live_pod
from cli.start_options import StartOptions
from orchestrator.config.paths import UnsafePathError, is_pod_name, runtime_dir
from orchestrator.serving.start_timeout import START_TIMEOUT_S

if TYPE_CHECKING:
    from orchestrator.config.model import PodConfig

__all__ = [
    "HOST_START_TIMEOUT_S",
    "connect_or_start",
    "ensure_host",
    "host_config",
    "last_line",
    "load_in_host",
    "provider_settings",
    "refuse_other_host_settings",
    "spawn_host",
    "spawn_pod",
    "start_in_background",
    "start_pod",
    "uses_host",
]


def start_in_background(
    args: list[str], log_path: Path, cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    """Start a process that outlives the caller (and ignores its Ctrl-C), logging privately."""
    from orchestrator.serving.host.starting import start_in_background

    try:
        return start_in_background(args, log_path, cwd)
    except UnsafePathError as exc:
        raise CliError(str(exc)) from None


def spawn_pod(
    workspace: Path,
    *,
    extra_args: list[str] | None = None,
    timeout_s: float = START_TIMEOUT_S,
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
        pod = live_pod(workspace, named)
        if pod is not None:
            return pod
        if proc.poll() is not None:
            raise CliError(f"the pod exited at start: {last_line(log_path)} (log: {log_path})")
        time.sleep(0.05)
    raise CliError(f"the pod did not start within {timeout_s:.0f} s (log: {log_path})")


def last_line(log_path: Path) -> str:
    """The last line a process that failed at start wrote, without its ``pod: error:``."""
    from orchestrator.serving.host.starting import last_line

    return last_line(log_path)


def uses_host(workspace: Path, no_host: bool) -> bool:
    """Whether pods for this workspace go into this user's ``pod host``: not with
    ``--no-host``, ``POD_NO_HOST=1`` or ``[host] enabled = false``."""
    from orchestrator.config.loading import ConfigError, load_config

    if _host_refused(no_host):
        return False
    try:
        return load_config(workspace).host.enabled
    except ConfigError as exc:
        raise CliError(str(exc)) from None


def _host_refused(no_host: bool) -> bool:
    """``--no-host`` or ``POD_NO_HOST=1``: no pod host, whatever the config says."""
    return no_host or os.environ.get("POD_NO_HOST") == "1"


def start_pod(workspace: Path, options: StartOptions, session: Path | None) -> PodInfo:
    """Start the workspace's pod: in this user's ``pod host`` (started if none runs) unless
    :func:`uses_host` says otherwise; then as a ``pod serve`` process.

    A host that is needed is started first, before the configuration is built, when the
    user's file plainly leaves the host on (:func:`~orchestrator.config.host_switch.
    host_plainly_on`): its start then overlaps the config's. Should the configuration turn
    out invalid, a host started so that does not listen yet is stopped again; one that does
    leaves by itself after ``host.idle_exit_s`` with no pod, as any host started for a run."""
    early = None
    if not _host_refused(options.no_host):
        from orchestrator.config.host_switch import host_plainly_on

        early = spawn_host() if host_plainly_on() else None
    try:
        if not uses_host(workspace, options.no_host):
            return spawn_pod(workspace, extra_args=options.serve_args(session), name=options.name)
        return load_in_host(workspace, options, session, starting=early)
    except BaseException:
        if early is not None:
            _stop_unless_listening(early)
        raise


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
    from orchestrator.config.loading import ConfigError, load_config

    try:
        return load_config(
            workspace,
            name=name,
            session=session.resolve() if session is not None else None,
            **options.overrides(),
            scripted_script=script.resolve() if script is not None else None,
            mcp={"servers": mcp_servers} if mcp_servers else None,
        )
    except ConfigError as exc:
        raise CliError(str(exc)) from None


def load_in_host(
    workspace: Path,
    options: StartOptions,
    session: Path | None,
    *,
    starting: subprocess.Popen[bytes] | None = None,
) -> PodInfo:
    """Load the workspace's pod into the running host (starting one first when none runs;
    ``starting``: the host this command started already, see :func:`ensure_host`)."""
    import asyncio

    from orchestrator.serving.host import HostError, ask_host

    name = options.name or default_name(workspace)
    config = host_config(workspace, options, session, name=name)
    ensure_host(starting)
    params = {
        "config": config.portable(),
        "continue": session is None and not options.new,
        "socket": str(runtime_dir() / f"{name}.sock"),
        "provider_settings": provider_settings(),
    }
    try:
        asyncio.run(ask_host("load", params))
    except HostError as exc:
        raise CliError(str(exc)) from None
    pod = live_pod(workspace, options.name)
    if pod is None:
        raise CliError(f"the pod host loaded {name} but it does not answer on its socket")
    return pod


def provider_settings() -> dict[str, Any]:
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
    params = {"provider_settings": provider_settings(), "socket": str(live.socket)}
    try:
        differ = asyncio.run(ask_host("check", params))
    except HostError:
        return  # the host left meanwhile (its pods with it), or predates the check
    if differ:
        raise CliError(mismatch_message([str(name) for name in differ], pod=live.name))


HOST_START_TIMEOUT_S = START_TIMEOUT_S


def spawn_host() -> subprocess.Popen[bytes] | None:
    """Start this user's ``pod host`` in the background unless one runs (its process, or
    None); see :mod:`orchestrator.serving.host.starting`."""
    from orchestrator.serving.host.starting import spawn_host

    try:
        return spawn_host()
    except UnsafePathError as exc:
        raise CliError(str(exc)) from None


def _stop_unless_listening(proc: subprocess.Popen[bytes]) -> None:
    from orchestrator.serving.host.starting import stop_unless_listening

    stop_unless_listening(proc)


def ensure_host(starting: subprocess.Popen[bytes] | None = None) -> None:
    """Wait until this user's ``pod host`` listens (started now if none runs)."""
    from orchestrator.serving.host import HostError
    from orchestrator.serving.host.starting import ensure_host

    try:
        ensure_host(starting)
    except (HostError, UnsafePathError) as exc:
        raise CliError(str(exc)) from None


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
    live = live_pod(workspace, options.name)
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
