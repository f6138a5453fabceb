"""``pod run`` through a ``pod host``: the first command starts the host, every pod of the
user loads into it, idle ones unload and load again, and the host leaves with its last pod."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from orchestrator.serving.server import socket_is_live
from tests.cli.helpers import pod

# The demo's replies are read for what the host did with their pods, never paused mid-stream.
pytestmark = pytest.mark.usefixtures("demo_at_once")


def test_pods_run_in_one_host_that_unloads_and_leaves_with_the_last_pod(
    env: dict[str, str], tmp_path: Path, short_dir: Path
) -> None:
    env = {k: v for k, v in env.items() if k != "POD_NO_HOST"}
    workspaces = []
    for name in ("alpha", "beta"):
        ws = tmp_path / name
        ws.mkdir()
        (ws / "README.md").write_text(f"# {name}\n")
        workspaces.append(ws)
    for ws in workspaces:
        done = pod(env, "run", "hello", "--workspace", str(ws))
        assert done.returncode == 0, done.stderr
        assert "not a language model" in done.stdout
    control = short_dir / "pod" / "host.sock"
    assert socket_is_live(control)
    listed = json.loads(pod(env, "ls", "--json").stdout)
    assert {row["name"] for row in listed} == {"alpha", "beta"}
    assert len({row["pid"] for row in listed}) == 1  # one process serves both
    rows = {r["name"]: r for r in json.loads(pod(env, "host", "ls", "--json").stdout)["pods"]}
    assert rows["alpha"]["loaded"] and rows["alpha"]["state"] == "idle"
    # Unloaded, alpha keeps its socket; the next command loads it again, same conversation.
    evicted = pod(env, "host", "evict", "alpha")
    assert evicted.returncode == 0, evicted.stderr
    rows = {r["name"]: r for r in json.loads(pod(env, "host", "ls", "--json").stdout)["pods"]}
    assert (rows["alpha"]["loaded"], rows["alpha"]["state"]) == (False, "unloaded")
    again = pod(env, "run", "once more", "--workspace", str(workspaces[0]))
    assert again.returncode == 0, again.stderr
    items = json.loads(pod(env, "history", "alpha", "--json").stdout)
    assert [i["text"] for i in items if i["kind"] == "user_message"] == ["hello", "once more"]
    # A pod that cannot be unloaded says why, in one line.
    busy = pod(env, "host", "evict", "nobody")
    assert busy.returncode == 1 and "no pod named nobody" in busy.stderr
    for name in ("alpha", "beta"):
        assert pod(env, "shutdown", name).returncode == 0
    deadline = time.monotonic() + 20
    while socket_is_live(control) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not socket_is_live(control)  # the host left with its last pod


def test_no_host_starts_a_process_of_its_own(
    env: dict[str, str], workspace: Path, short_dir: Path
) -> None:
    env = {k: v for k, v in env.items() if k != "POD_NO_HOST"}
    done = pod(env, "run", "hello", "--no-host", "--workspace", str(workspace))
    assert done.returncode == 0, done.stderr
    assert not socket_is_live(short_dir / "pod" / "host.sock")


def test_pod_ls_asks_the_host_and_leaves_unloaded_pods_unloaded(
    env: dict[str, str], tmp_path: Path
) -> None:
    env = {k: v for k, v in env.items() if k != "POD_NO_HOST"} | {"COLUMNS": "80"}
    long_name = "a-workspace-whose-name-is-long-enough-to-squeeze-columns"
    hosted, solo = tmp_path / long_name, tmp_path / "solo"
    for ws in (hosted, solo):
        ws.mkdir()
        (ws / "README.md").write_text("# ws\n")
    assert pod(env, "run", "hello", "--workspace", str(hosted)).returncode == 0
    assert pod(env, "run", "hello", "--no-host", "--workspace", str(solo)).returncode == 0
    assert pod(env, "host", "evict", long_name).returncode == 0
    host = json.loads(pod(env, "host", "ls", "--json").stdout)["host"]
    rows = {row["name"]: row for row in json.loads(pod(env, "ls", "--json").stdout)}
    assert set(rows) == {long_name, "solo"}
    assert rows[long_name]["host"] and rows[long_name]["pid"] == host["pid"]
    assert (rows[long_name]["loaded"], rows[long_name]["state"]) == (False, "unloaded")
    assert rows[long_name]["rss_share_bytes"] is None
    assert not rows["solo"]["host"] and rows["solo"]["pid"] != host["pid"]
    assert (rows["solo"]["state"], rows["solo"]["status"]) == ("idle", "idle")
    shown = pod(env, "ls")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), shown.stdout
    assert any(long_name in line and "unloaded" in line for line in lines), shown.stdout
    assert f"pod host {host['pid']}: 0 of 1 pods loaded; RSS" in shown.stdout
    # Listing it did not load it: only the host was asked, not the pod's socket.
    listing = json.loads(pod(env, "host", "ls", "--json").stdout)
    [row] = listing["pods"]
    assert (row["loaded"], row["state"]) == (False, "unloaded")
    # Loaded again, the pod has a share of what the host grew by, and the shares add up.
    assert pod(env, "status", long_name).returncode == 0
    listing = json.loads(pod(env, "host", "ls", "--json").stdout)
    [row], host = listing["pods"], listing["host"]
    assert row["loaded"] and row["rss_share_bytes"] is not None
    assert row["rss_share_bytes"] == max(0, host["rss_bytes"] - host["baseline_rss_bytes"])


def test_a_pod_in_the_host_says_what_its_workspace_config_could_not_give(
    env: dict[str, str], workspace: Path, short_dir: Path
) -> None:
    # The config crosses into the host as JSON: what loading it warned of must cross too.
    env = {k: v for k, v in env.items() if k != "POD_NO_HOST"}
    (workspace / ".pod").mkdir()
    (workspace / ".pod" / "config.toml").write_text("allow_bash = true\n")
    done = pod(env, "run", "hello", "--workspace", str(workspace))
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stderr.splitlines() if "sets allow_bash" in line]
    listed = json.loads(pod(env, "ls", "--json").stdout)
    assert [row["name"] for row in listed] == [workspace.name]  # it runs in the host
    shown = json.loads(pod(env, "status", "--workspace", str(workspace), "--json").stdout)
    assert len(shown["config_warnings"]) == 1 and "sets allow_bash" in shown["config_warnings"][0]
    # Unloaded and loaded again from the host's own copy of its config: still said.
    assert pod(env, "host", "evict", workspace.name).returncode == 0
    again = pod(env, "run", "again", "--workspace", str(workspace))
    assert [line for line in again.stderr.splitlines() if "sets allow_bash" in line]
    assert pod(env, "shutdown", workspace.name).returncode == 0
