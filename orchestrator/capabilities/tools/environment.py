"""The environment of tool processes: an allow-list over the pod's own, never its secrets.

The pod's environment holds ``ANTHROPIC_API_KEY`` and whatever else the user's shell exported
(``GITHUB_TOKEN``, ``AWS_*``, …). A command the model writes must not see them: what it prints
goes into the session and to the API, and the command itself can send it anywhere. So a tool
process gets only the variables on an allow-list: :data:`DEFAULT_ALLOW` plus the pod config's
``tool_env_allow``, then the config's ``tool_env`` values. A name that looks like a secret
(:data:`orchestrator.core.redaction.SECRET_NAMES`) passes only when the allow-list names it exactly, never through a
``PREFIX*`` entry.

A clean environment is not enough on its own: a tool process is the pod's child, running as
the same user, so ``cat /proc/$PPID/environ`` would show the environment the pod started with.
:func:`forbid_inspection` closes that: the pod process becomes non-dumpable, so processes of
the same (non-root) user can read neither its ``/proc`` environment nor its memory.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Mapping, Sequence

from orchestrator.core.redaction import looks_secret

DEFAULT_ALLOW: tuple[str, ...] = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "TZ",
    "TMPDIR",
)
"""What every tool process may inherit: where programs are, who and where the user is, the
locale, the terminal type and the time zone. bash sets ``PWD``, ``SHLVL`` and ``HOSTNAME``
itself; the working directory is always the workspace."""

NETWORK_SETTINGS: tuple[str, ...] = (
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "PIP_CERT",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
)
"""What a program outside the sandbox needs to reach the network as the user's shell does:
the certificates to trust (a company's TLS-inspecting proxy) and the proxy to go through.
Hooks get them (:func:`network_settings`); sandboxed commands do not (their network is the
sandbox's)."""

FIXED: dict[str, str] = {"PAGER": "cat", "GIT_PAGER": "cat"}
"""Always set (``tool_env`` may override): pagers would wait for a terminal that is not there."""


def tool_environment(
    environ: Mapping[str, str],
    *,
    allow: Sequence[str] = (),
    fixed: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment for a tool process.

    Variables of ``environ`` named by :data:`DEFAULT_ALLOW` or ``allow`` (``NAME`` exactly, or
    ``PREFIX*``), except secret-looking names that only a ``PREFIX*`` entry matched; then
    :data:`FIXED`; then ``fixed``.
    """
    entries = (*DEFAULT_ALLOW, *allow)
    exact = {entry for entry in entries if not entry.endswith("*")}
    prefixes = tuple(entry[:-1] for entry in entries if entry.endswith("*"))
    env = {
        name: value
        for name, value in environ.items()
        if name in exact or (name.startswith(prefixes) and not looks_secret(name))
    }
    env.update(FIXED)
    env.update(fixed or {})
    return env


def network_settings(environ: Mapping[str, str]) -> dict[str, str]:
    """The :data:`NETWORK_SETTINGS` variables ``environ`` sets (none of them a secret's
    name: a proxy's URL with a password in it is the user's own, for the user's own hooks)."""
    return {name: environ[name] for name in NETWORK_SETTINGS if name in environ}


_PR_SET_DUMPABLE = 4


def forbid_inspection() -> bool:
    """Make this process non-dumpable (Linux); whether that worked.

    Called by every ``pod`` process at start (``cli.main``) and by ``pod serve``, not by the
    library: it is a property of the whole process (no core dumps, no debugger attach without
    root). ``pod run``, ``pod chat`` and ``pod acp`` start pods, so they are a pod's parent and
    hold the same environment.
    """
    if sys.platform != "linux":
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return bool(libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0)
