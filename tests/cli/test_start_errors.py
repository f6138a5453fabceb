"""A pod that cannot start says why in one clean line: no pydantic paths, no exception class
names, no `pod: error:` said twice."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import pod


def test_a_bad_thinking_value_is_a_usage_error_in_words(
    env: dict[str, str], workspace: Path
) -> None:
    done = pod(env, "run", "--thinking", "lots", "hi", "--workspace", str(workspace))
    assert done.returncode == 2, done.stderr
    text = " ".join(done.stderr.replace("│", " ").split())
    assert "'lots' is not auto, adaptive, off or a budget of at least 1024 thinking tokens" in text
    assert "literal[" not in text
    small = pod(env, "serve", "--thinking", "10", "--workspace", str(workspace))
    assert small.returncode == 2 and "'10' is not auto" in small.stderr
    # `pod fleet add` takes `pod serve`'s options, the check with them (before Ray is asked).
    fleet = pod(env, "fleet", "add", str(workspace), "--thinking", "lots")
    assert fleet.returncode == 2 and "'lots' is not auto" in fleet.stderr


def test_a_bad_thinking_value_in_a_config_file_names_the_key_only(
    env: dict[str, str], workspace: Path
) -> None:
    config = Path(env["XDG_CONFIG_HOME"]) / "pod" / "config.toml"
    config.write_text('thinking = "lots"\n')
    done = pod(env, "run", "hi", "--workspace", str(workspace))
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert f"{config}: thinking: Input should be 'auto', 'adaptive' or 'off'" in line
    assert "literal[" not in line and line.count("pod: error:") == 1


@pytest.mark.parametrize("host", [True, False])
def test_a_pod_that_cannot_start_says_why_once(
    env: dict[str, str], workspace: Path, host: bool
) -> None:
    env = {k: v for k, v in env.items() if k != "POD_NO_HOST"} | (
        {} if host else {"POD_NO_HOST": "1"}
    )
    done = pod(env, "run", "--provider", "anthropic", "hi", "--workspace", str(workspace))
    assert done.returncode == 1
    why = "--provider anthropic needs ANTHROPIC_API_KEY (or drop the option to run offline)"
    [line] = done.stderr.splitlines()
    assert line.count("pod: error:") == 1 and why in line, line
    assert "PodSetupError" not in line
    if host:  # the host that was started for it leaves once empty: stop it now
        pod(env, "host", "stop")


def test_the_start_options_become_config_overrides(workspace: Path) -> None:
    from cli.start_options import start_overrides
    from orchestrator.config.loading import load_config

    def given(thinking: str | None, effort: str | None, sandbox: str | None = None) -> Any:
        return start_overrides(
            provider="scripted",
            model=None,
            allow_bash=False,
            permission_mode="yolo",
            thinking=thinking,
            effort=effort,
            sandbox=sandbox,
        )

    overrides = given("2048", "low", "off")
    assert overrides["thinking"] == 2048 and overrides["sandbox"] == {"mode": "off"}
    assert overrides["permissions"] == {"mode": "yolo", "deny": ["bash"]}
    config = load_config(workspace, **overrides)
    assert config.sandbox.mode == "off" and config.thinking == 2048 and config.effort == "low"
    # Not given: the config files decide (`pod chat` / `pod run` take no --sandbox).
    unset = given(None, None)
    assert unset["sandbox"] is None and unset["thinking"] is None


def _alive_with(marker: str) -> list[int]:
    """The live processes whose command line holds ``marker`` (a path private to the test)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            pids.append(int(entry.name))
    return pids


def test_a_config_error_found_after_the_host_started_leaves_no_host_behind(
    env: dict[str, str], workspace: Path, short_dir: Path
) -> None:
    # `pod run` starts the pod host before it builds the configuration (the user's file
    # leaves the host on); the workspace's file then turns out invalid. The error is the
    # one line it always was, and the host started for nothing does not stay for
    # host.idle_exit_s (here ten minutes).
    env = {k: v for k, v in env.items() if k != "POD_NO_HOST"}
    user = Path(env["XDG_CONFIG_HOME"]) / "pod" / "config.toml"
    user.write_text('[sandbox]\nmode = "off"\n\n[host]\nidle_exit_s = 600\n')
    (workspace / ".pod").mkdir()
    (workspace / ".pod" / "config.toml").write_text('thinking = "lots"\n')
    done = pod(env, "run", "hi", "--workspace", str(workspace))
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert "thinking: Input should be 'auto', 'adaptive' or 'off'" in line
    log = short_dir / "pod" / "host.log"
    assert log.exists()  # the host was started, before the config was read
    if "listening" in log.read_text():
        # It got to listen before the command read the config (a starved command on a
        # busy machine): it may have pods of others now, so it is left to its idle exit.
        listing = pod(env, "host", "ls", "--json")
        assert json.loads(listing.stdout)["pods"] == []
        pod(env, "host", "stop")
    else:
        assert _alive_with(str(log)) == []  # stopped before it listened, and waited for
