"""A user's ``$HOME`` for the sandbox's attack tests, on a real path outside ``/tmp``.

The sandbox gives every command a private ``/tmp``: an attack test whose home, workspace or
socket lies under ``/tmp`` fails for the wrong reason (the path is simply not there inside).
So these tests build the user's world under ``/var/tmp`` (or ``$POD_TEST_HOME_ROOT``), with
the XDG folders inside that home as a real user has them.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = ["UserHome", "script", "user_home"]


@dataclass(frozen=True, slots=True)
class UserHome:
    """A user's home and XDG folders, all under one real folder outside ``/tmp``."""

    home: Path
    config: Path
    """``$XDG_CONFIG_HOME`` (``~/.config``): the pod's user config is ``config/pod``."""
    state: Path
    """``$XDG_STATE_HOME`` (``~/.local/state``): sessions and checkpoints."""
    runtime: Path
    """``$XDG_RUNTIME_DIR``: pod sockets (short: a socket's path is limited)."""

    def write_user_config(self, toml: str) -> Path:
        """Replace the user's pod config (``~/.config/pod/config.toml``)."""
        path = self.config / "pod" / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(toml)
        return path


@pytest.fixture
def user_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[UserHome]:
    """``$HOME`` and the XDG folders on a real path the sandbox does not hide by accident,
    with a user config that turns the sandbox on."""
    root = Path(os.environ.get("POD_TEST_HOME_ROOT", "/var/tmp"))
    base = Path(tempfile.mkdtemp(prefix="podh", dir=root))
    home = base / "h"
    world = UserHome(
        home=home,
        config=home / ".config",
        state=home / ".local" / "state",
        runtime=base / "r",
    )
    for folder in (world.config, world.state, world.runtime):
        folder.mkdir(parents=True)
    world.runtime.chmod(0o700)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(world.config))
    monkeypatch.setenv("XDG_STATE_HOME", str(world.state))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(world.runtime))
    world.write_user_config('[sandbox]\nmode = "on"\n')
    try:
        yield world
    finally:
        shutil.rmtree(base, ignore_errors=True)


def script(path: Path, body: str) -> Path:
    """An executable script at ``path`` (its folders made), as the user keeps one: ``body``
    dedented."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(body).lstrip())
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path
