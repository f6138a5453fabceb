"""The interactive terminal UI (Textual) attached to a pod over its socket."""

from __future__ import annotations

__all__ = ["PodApp", "run_ui"]


def __getattr__(name: str) -> object:
    # Textual is heavy; importing the package (e.g. for the pure model) must not pull it in.
    if name in __all__:
        from cli.tui import app

        return getattr(app, name)
    raise AttributeError(name)
