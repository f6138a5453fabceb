"""The interactive terminal UI (Textual) attached to a pod over its socket."""

from __future__ import annotations

import importlib

__all__ = ["PodApp", "run_ui"]

_HOMES = {"PodApp": "cli.tui.app", "run_ui": "cli.tui.launch"}
"""The module each exported name lives in."""


def __getattr__(name: str) -> object:
    # Textual is heavy; importing the package (e.g. for the pure model) must not pull it in.
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(name)
