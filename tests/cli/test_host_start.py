"""The host a ``pod run`` starts (``python -m cli.host_start``): what its start imports, its
garbage collector paused only while it imports, and its errors as ``pod`` prints them.

A cold ``pod run`` waits for this process and then for the SDK's import in it (issue 40 §5,
docs/performance.md). Start-up time is a property of what gets imported, so the test asserts
the import set, not a time."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from cli.host_start import _resume_gc

REPO = Path(__file__).resolve().parents[2]

NOT_BEFORE_THE_FIRST_REQUEST = (
    "typer",  # the command line: the host is started with its options known
    "click",
    "cli.main",
    "cli.commands",
    "httpx",  # web_fetch's client, with its own command line's click, rich and pygments
    "rich",
    "pygments",
    "orchestrator.adapters.web",
    # The HTTP API: only with --http or host.http (docs/http.md), which this user's config lacks.
    "orchestrator.serving.http",
    "fastapi",
    "uvicorn",
    "sse_starlette",
    "starlette",
)

_PROBE = r"""
import gc, json, sys
from pathlib import Path
from cli.host_start import _start_host
host, preload, http = _start_host(None, None, True, None, False)
assert http is None, http
# What the host then does for the first pod: build it, web_fetch registered.
from orchestrator.capabilities.tools.registry import default_registry
from orchestrator.config.model import PodConfig
import orchestrator.serving.pod.assemble
registry = default_registry(PodConfig(workspace=Path.cwd()), web_fetch=True)
assert "web_fetch" in registry.names(), registry.names()
loaded = sorted(
    m for m in {forbidden!r} if any(k == m or k.startswith(m + ".") for k in sys.modules)
)
print(json.dumps({{"loaded": loaded, "preload": preload is not None}}))
"""


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    for name in ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR"):
        (tmp_path / name).mkdir(mode=0o700)
        env[name] = str(tmp_path / name)
    env["PYTHONPATH"] = str(REPO)
    return env


def test_the_host_start_and_its_first_pod_import_no_command_line_and_no_web_client(
    tmp_path: Path,
) -> None:
    probe = _PROBE.format(forbidden=NOT_BEFORE_THE_FIRST_REQUEST)
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_env(tmp_path),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found == {"loaded": [], "preload": False}


def test_collection_resumes_once_the_sdk_import_is_over() -> None:
    was = gc.isenabled()
    importing = threading.Event()
    release = threading.Event()

    def sdk_import() -> None:
        importing.set()
        release.wait(60)

    thread = threading.Thread(target=sdk_import, daemon=True)
    try:
        gc.disable()
        thread.start()
        importing.wait(60)
        _resume_gc(thread)
        assert not gc.isenabled()  # still importing
        release.set()
        thread.join(60)
        for _ in range(6000):  # the resuming thread runs right after the join
            if gc.isenabled():
                break
            threading.Event().wait(0.01)
        assert gc.isenabled()
        _resume_gc(None)  # no import to wait for: at once
        assert gc.isenabled()
    finally:
        gc.unfreeze()
        if not was:
            gc.disable()
        else:
            gc.enable()


def test_a_bad_user_config_is_one_error_line_and_exit_1(tmp_path: Path) -> None:
    env = _env(tmp_path)
    config = Path(env["XDG_CONFIG_HOME"]) / "pod" / "config.toml"
    config.parent.mkdir()
    config.write_text("[host]\nidle_exit_s = 'soon'\n")
    log = tmp_path / "host.log"
    done = subprocess.run(
        [sys.executable, "-m", "cli.host_start", "--log-file", str(log)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 1
    # Its output goes to the log, whose last line the starting command quotes.
    last = log.read_text().strip().splitlines()[-1]
    assert last.startswith("pod: error: ") and "idle_exit_s" in last
