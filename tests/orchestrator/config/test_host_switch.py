"""The one key a cold ``pod run`` reads before the config model: ``[host] enabled`` in the
user's file. Whenever it says "on", the whole configuration says so too (or is invalid, and
the command stops with that error); whatever else it says leaves the whole one to decide."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrator.config.host_switch import host_plainly_on
from orchestrator.config.loading import ConfigError, load_config
from orchestrator.config.paths import user_config_file

FILES = {
    "absent": None,
    "empty": "",
    "no host table": 'model = "claude-x"\n',
    "table without the key": "[host]\nidle_exit_s = 5\n",
    "on": "[host]\nenabled = true\n",
    "off": "[host]\nenabled = false\n",
    "zero": "[host]\nenabled = 0\n",
    "a string": '[host]\nenabled = "no"\n',
    "host not a table": "host = 3\n",
    "not TOML": "[host\nenabled = true\n",
    "invalid elsewhere": 'thinking = "lots"\n',
}


@pytest.mark.parametrize("name", list(FILES))
def test_plainly_on_only_when_the_whole_config_agrees(name: str, workspace: Path) -> None:
    path = user_config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    text = FILES[name]
    if text is None:
        path.unlink(missing_ok=True)
    else:
        path.write_text(text)
    try:
        enabled: bool | None = load_config(workspace).host.enabled
    except ConfigError:
        enabled = None  # the command stops with this error, host or not
    if host_plainly_on():  # the host may be started before the whole config is read
        assert enabled in (True, None), name
    # The files where the key is plain and the whole config valid are read as it reads them.
    if name in ("absent", "empty", "no host table", "table without the key", "on"):
        assert host_plainly_on() and enabled is True
    if name in ("off", "zero", "a string", "host not a table", "not TOML"):
        assert not host_plainly_on()


def test_a_fifo_for_a_config_file_is_not_waited_on(workspace: Path) -> None:
    path = user_config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    assert host_plainly_on() is False  # at once: the whole config then says what it is
