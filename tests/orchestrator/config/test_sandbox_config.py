"""``[sandbox]`` and ``[mcp.servers.<name>] sandbox``: how they read, and that they are grants
(a workspace's config may ask for more sandbox, never for less, nor for more network)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from orchestrator.config.loading import ConfigError, load_config
from orchestrator.config.paths import config_file, user_config_file
from orchestrator.config.sandbox import SandboxConfig
from orchestrator.core.hosts import parse_host_rule


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_a_workspace_may_sandbox_a_server_you_configured_never_unsandbox_one(
    tmp_path: Path,
) -> None:
    _write(
        user_config_file(),
        '[mcp.servers.boxed]\ncommand = "a"\nsandbox = true\n[mcp.servers.open]\ncommand = "b"\n',
    )
    _write(
        config_file(tmp_path),
        "[mcp.servers.boxed]\nsandbox = false\n"
        "[mcp.servers.open]\nsandbox = true\n"
        # A server you did not configure: the request is none of yours, and dropped quietly.
        "[mcp.servers.theirs]\nsandbox = true\n",
    )
    config = load_config(tmp_path)
    servers = config.mcp.servers
    assert set(servers) == {"boxed", "open"}
    assert servers["boxed"].sandbox and servers["open"].sandbox
    assert (servers["boxed"].command, servers["open"].command) == ("a", "b")
    [warning] = config.load_warnings
    assert "mcp.servers.boxed.sandbox" in warning and "theirs" not in warning


def test_a_workspace_may_not_change_a_server_beside_sandboxing_it(tmp_path: Path) -> None:
    _write(user_config_file(), '[mcp.servers.s]\ncommand = "a"\n')
    _write(config_file(tmp_path), '[mcp.servers.s]\nsandbox = true\ncommand = "evil"\n')
    config = load_config(tmp_path)
    assert config.mcp.servers["s"].command == "a"
    [warning] = config.load_warnings
    assert "mcp.servers" in warning


def test_a_workspace_may_take_the_network_away_never_give_it(tmp_path: Path) -> None:
    _write(user_config_file(), '[sandbox]\nnetwork = ["pypi.org:443"]\n')
    _write(config_file(tmp_path), "[sandbox]\nnetwork = []\n")
    assert load_config(tmp_path).sandbox.network == []
    assert load_config(tmp_path).load_warnings == []
    _write(config_file(tmp_path), '[sandbox]\nnetwork = ["evil.example:443"]\n')
    config = load_config(tmp_path)
    assert config.sandbox.network == ["pypi.org:443"]
    [warning] = config.load_warnings
    assert "sandbox.network" in warning


def test_a_bad_network_entry_stops_the_pod_naming_the_file_and_the_entry(tmp_path: Path) -> None:
    _write(user_config_file(), '[sandbox]\nnetwork = ["pypi.org:https"]\n')
    with pytest.raises(ConfigError, match=r"config\.toml: sandbox\.network: .*'pypi\.org:https'"):
        load_config(tmp_path)


def test_the_config_takes_false_true_or_a_list_and_names_a_bad_entry() -> None:
    assert SandboxConfig().host_rules() == ()
    assert SandboxConfig(network=True).host_rules() == ()
    assert SandboxConfig(network=["pypi.org:443"]).host_rules() == (
        parse_host_rule("pypi.org:443"),
    )
    with pytest.raises(ValidationError, match=r"entry 'pypi\.org:https'"):
        SandboxConfig(network=["pypi.org:https"])
    with pytest.raises(ValidationError):
        SandboxConfig.model_validate({"network": "pypi.org"})
