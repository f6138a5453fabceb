"""Where a pod process or a pod host logs, set once at its start."""

from __future__ import annotations

import logging
from pathlib import Path

from cli.errors import CliError

__all__ = ["setup_logging"]


def setup_logging(log_file: Path | None, verbose: bool) -> None:
    """Where a pod process (or a host) logs: ``--log-file`` (capped), else stderr."""
    if log_file is not None:
        from orchestrator.config.paths import UnsafePathError
        from orchestrator.serving.pod_log import log_to

        try:
            log_to(log_file)
        except UnsafePathError as exc:
            raise CliError(str(exc)) from None
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
