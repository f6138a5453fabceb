"""Running a pod host process: what ``pod host`` does, and the lighter entry a run starts.

``pod host`` (:mod:`cli.commands.host`) parses its options with Typer and calls
:func:`serve_host`. A host the CLI starts for a run (:func:`cli.pods.start.spawn_host`) is
``python -m cli.host_start --log-file PATH`` instead: the same host with
``--exit-when-empty``, reached without Typer, ``cli.main`` and the command table, since
a cold ``pod run`` waits for this process's start (docs/performance.md).

Both pause Python's cyclic garbage collector while the host imports, and the SDK with it, and
resume it once the SDK is in: an import allocates hundreds of thousands of objects and no
garbage worth a collection, and the collections it triggers make ``import anthropic`` about
15 % slower. The objects of the start are then frozen (``gc.freeze``), so later collections
in the long-lived host do not walk them again.
"""

from __future__ import annotations

import gc
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from orchestrator.serving.host import Host

__all__ = ["main", "serve_host"]


GC_PAUSE_CEILING_S = 120.0
"""The longest the collector stays paused waiting for the SDK's import (which takes seconds)."""


def _resume_gc(after: threading.Thread | None) -> None:
    """Collect cycles again once ``after`` (the SDK's import) is over, at once without it."""

    def resume() -> None:
        if after is not None:
            after.join(GC_PAUSE_CEILING_S)
        gc.freeze()
        gc.enable()

    if after is None:
        resume()
    else:
        threading.Thread(target=resume, name="pod-gc-resume", daemon=True).start()


def serve_host(
    *,
    idle_unload_s: float | None = None,
    max_loaded: int | None = None,
    exit_when_empty: bool = False,
    log_file: Path | None = None,
    verbose: bool = False,
    http: str | None = None,
    http_public: bool = False,
) -> None:
    """Run the host in the foreground until SIGTERM, SIGINT or ``pod host stop``;
    :class:`~cli.errors.CliError` when it cannot (a bad config, a host already running).
    ``http``: serve the HTTP API too (docs/http.md); default: the config's ``host.http``."""
    gc.disable()  # see the module's docstring; resumed in every case below
    preload: threading.Thread | None = None
    try:
        host, preload, configured_http = _start_host(
            idle_unload_s, max_loaded, exit_when_empty, log_file, verbose
        )
    finally:
        _resume_gc(preload)
    import asyncio

    from cli.errors import CliError
    from orchestrator.serving.server import ServerError

    address = None
    if http is not None or configured_http is not None:
        from cli.http_api import http_address

        address = http_address(http or configured_http or "", public=http_public)
    sys.stderr.write(f"pod host listening on {host.control_path}\n")
    sys.stderr.flush()
    try:
        if address is None:
            from orchestrator.serving.host import run_host

            asyncio.run(run_host(host))
        else:
            from cli.http_api import run_host_with_http

            asyncio.run(run_host_with_http(host, address))
    except ServerError as exc:
        raise CliError(str(exc)) from None


def _start_host(
    idle_unload_s: float | None,
    max_loaded: int | None,
    exit_when_empty: bool,
    log_file: Path | None,
    verbose: bool,
) -> tuple[Host, threading.Thread | None, str | None]:
    """The host, built, the SDK's import started on a thread when pods will want it, and the
    config's ``host.http``."""
    from cli.errors import CliError
    from cli.process_logging import setup_logging
    from orchestrator.config.loading import ConfigError, load_config
    from orchestrator.serving.host import Host
    from orchestrator.serving.host.address import control_socket
    from orchestrator.serving.liveness import socket_is_live

    setup_logging(log_file, verbose)
    try:
        settings = load_config(Path.home()).host
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    if socket_is_live(control_socket()):
        raise CliError(f"a pod host already runs for this user ({control_socket()})")
    host = Host(
        idle_unload_s=idle_unload_s if idle_unload_s is not None else settings.idle_unload_s,
        max_loaded=max_loaded if max_loaded is not None else settings.max_loaded,
        exit_when_empty=exit_when_empty,
        idle_exit_s=settings.idle_exit_s,
    )
    from orchestrator.adapters.inspection import forbid_inspection

    forbid_inspection()
    from orchestrator.adapters.providers.preload import preload_provider, wants_provider

    # The SDK's import overlaps the first load (docs/performance.md).
    return host, preload_provider() if wants_provider() else None, settings.http


def main(argv: list[str] | None = None) -> None:
    """``python -m cli.host_start [--log-file PATH] [--verbose]``: a host that leaves after
    ``host.idle_exit_s`` with no pod, as ``pod host --exit-when-empty``; errors as ``pod``
    prints them (``pod: error: …``, exit 1), which the starting command reads back."""
    import argparse

    from orchestrator.adapters.inspection import forbid_inspection

    # As `pod` does first: this process holds the user's environment (ANTHROPIC_API_KEY).
    forbid_inspection()
    parser = argparse.ArgumentParser(prog="pod host (started for a run)")
    parser.add_argument("--log-file", type=Path, default=None)
    parser.add_argument("--verbose", "-v", action="store_true")
    args = parser.parse_args(argv)
    from cli.errors import CliError, print_error
    from orchestrator.errors import OrchestratorError

    try:
        serve_host(exit_when_empty=True, log_file=args.log_file, verbose=args.verbose)
    except CliError as exc:
        print_error(str(exc))
        sys.exit(exc.exit_code)
    except OrchestratorError as exc:
        print_error(str(exc))
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    gc.disable()  # before the imports main() does; serve_host resumes it
    main()
