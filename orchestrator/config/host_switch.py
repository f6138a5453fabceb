"""Whether the user's config plainly keeps the pod host on, read without the config model.

``pod run`` and ``pod chat`` start this user's pod host (when none runs) before they build
the whole configuration, so that the host's own start (its imports: half a second or more)
runs on another core while the command builds the config model (docs/performance.md). Only
``[host] enabled`` decides whether a pod goes into a host, and it is a grant: the user's own
file sets it, a workspace's file cannot (:mod:`orchestrator.config.grants`), and no option
does. :func:`host_plainly_on` reads that one key of that one file; any answer but a plain
"on" leaves the decision to the whole configuration, as before.
"""

from __future__ import annotations

import tomllib

from orchestrator.config.paths import user_config_file
from orchestrator.config.regular_file import CONFIG_MAX_BYTES, read_regular

__all__ = ["host_plainly_on"]


def host_plainly_on() -> bool:
    """True when the user's config file is absent, or is TOML whose ``[host]`` table is
    absent, has no ``enabled`` or has ``enabled = true``: the whole configuration then says
    the host is on, or is invalid. False for anything else (``false``, another value, a file
    that cannot be read or parsed), which only the whole configuration can judge."""
    path = user_config_file()
    if not path.exists() and not path.is_symlink():
        return True
    try:
        data = tomllib.loads(read_regular(path, max_bytes=CONFIG_MAX_BYTES).decode("utf-8"))
    except (OSError, ValueError):  # TOMLDecodeError and UnicodeDecodeError are ValueErrors
        return False
    host = data.get("host", {})
    return isinstance(host, dict) and host.get("enabled", True) is True
