"""Shared fixtures: short socket paths, isolated state dirs, and an in-process pod harness."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# No test may fail because the machine is slow: hypothesis's per-example deadline (200 ms by
# default) and its too-slow health check judge the machine, not the code. Every property
# test inherits this profile (an explicit @settings keeps it unless it names a deadline).
settings.register_profile(
    "pod", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile("pod")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``slow`` tests run only when asked for (``-m slow``), so the default run stays quick."""
    if "slow" in (config.option.markexpr or ""):
        return
    skip = pytest.mark.skip(reason="slow: run with -m slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _isolated_state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """Keep sessions, sockets, info files, user config and keys of the machine out of every
    test (the runtime directory is short: sockets' paths are limited to ~100 bytes)."""
    runtime = Path(tempfile.mkdtemp(prefix="pod-r"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    # As a user whose config turns the sandbox off: most tests' commands write beside the
    # workspace; the sandbox's own tests turn it on. A host a command started leaves with its
    # last pod, not host.idle_exit_s later: no test leaves a host behind. And who keeps no
    # skills, commands or agents in ~/.claude: the machine's own would change what a pod is
    # told (the library's tests turn the folders on, with a home of their own).
    user_config = tmp_path / "config" / "pod" / "config.toml"
    user_config.parent.mkdir(parents=True, exist_ok=True)
    if not user_config.exists():
        user_config.write_text(
            '[sandbox]\nmode = "off"\n\n[host]\nidle_exit_s = 0\n\n[skills]\nclaude_dirs = false\n'
        )
    # And a pod process per pod: the host's own tests use a host.
    monkeypatch.setenv("POD_NO_HOST", "1")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    # Model lookups are remembered per process; a fake API of a later test may get the
    # port of an earlier one, with other models.
    from orchestrator.adapters.providers.model_info import MODEL_INFOS

    MODEL_INFOS.clear()
    yield
    shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture
def demo_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The offline demo answers without a reader's pace (``POD_DEMO_PACE=0``), in this process
    and in the pods it starts: for tests that need the demo's words, not its timing (a reply
    otherwise streams for 4-5 s). Ask for it before an ``env`` fixture that copies os.environ."""
    monkeypatch.setenv("POD_DEMO_PACE", "0")


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A short directory for Unix sockets (their paths are limited to ~100 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="pod-t"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A small real workspace."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("# Demo\n\nA tiny project.\n")
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text("def main():\n    return 42\n")
    return ws


@pytest.fixture(params=["openat2", "walk"])
def fs_resolver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test with ScopedFS's openat2 resolver, then with its portable component walk."""
    from orchestrator.adapters.scoped_fs import resolver

    if request.param == "openat2":
        if resolver.openat2_fn() is None:
            pytest.skip("openat2 is not available here")
    else:
        # A private switch: forces the walk, which is what runs on kernels before 5.6.
        monkeypatch.setattr(resolver, "openat2_fn", lambda: None)
    return str(request.param)
