"""``pod sandbox show``: what a sandboxed command of this folder's pod sees, from the config a
pod started here would load, run as a person runs it (a real ``pod`` process)."""

from __future__ import annotations

import json
import os

from tests.cli.helpers import pod
from tests.faults.sandbox_home import UserHome, user_home  # noqa: F401


def test_show_lists_what_is_read_written_hidden_and_reached(
    user_home: UserHome,  # noqa: F811
) -> None:
    home = user_home.home
    user_home.write_user_config(
        '[sandbox]\nnetwork = ["pypi.org:443"]\n\n'
        '[permissions]\ndeny = ["read(.env)", "read(secrets/**)", "write(locked/**)"]\n'
    )
    for folder in (".ssh", ".cargo/bin", "projects/other", ".local/state/pod"):
        (home / folder).mkdir(parents=True, exist_ok=True)
    ws = home / "proj"
    for folder in (".git", "sub/deeper/.pod", "secrets", "locked"):
        (ws / folder).mkdir(parents=True)
    (ws / ".env").write_text("KEY=1\n")
    env = dict(os.environ)
    done = pod(env, "sandbox", "show", "--json", "--workspace", str(ws))
    assert done.returncode == 0, done.stderr
    view = json.loads(done.stdout)
    assert view["write"] == [str(ws)]
    assert view["read"][0] == "/" and str(home / ".cargo" / "bin") in view["read"]
    assert str(home / "projects") not in " ".join(view["read"])
    assert str(home) in view["private"] and "/tmp" in view["private"]
    for hidden in (home / ".ssh", home / ".config" / "pod", home / ".local/state/pod"):
        assert str(hidden) in view["hidden"]
    assert {str(ws / ".env"), str(ws / "secrets")} <= set(view["hidden"])
    assert set(view["read_only"]) == {
        str(ws / ".git"),
        str(ws / "sub" / "deeper" / ".pod"),
        str(ws / "locked"),
    }
    assert view["network"] == {
        "mode": "hosts",
        "hosts": ["pypi.org:443"],
        "host_loopback": False,
        "through": "proxy",
    }
    said = pod(env, "sandbox", "show", "--workspace", str(ws))
    assert said.returncode == 0, said.stderr
    assert "only pypi.org:443 (through the pod's proxy)" in said.stdout
    assert str(ws / "sub" / "deeper" / ".pod") in said.stdout
    # The workspace's config narrows the user's, as for the pod itself.
    (ws / ".pod").mkdir()
    (ws / ".pod" / "config.toml").write_text("[sandbox]\nnetwork = false\n")
    narrowed = json.loads(pod(env, "sandbox", "show", "--json", "-w", str(ws)).stdout)
    assert narrowed["network"]["mode"] == "none"
