"""``[web]``: one clear error for both domain lists, a workspace's file that may only narrow,
and ``--web on|off`` from every command that starts a pod."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.start_options import PodSettings, StartOptions
from orchestrator.config.loading import ConfigError, load_config
from orchestrator.config.paths import config_file


def _write_user(text: str) -> Path:
    # conftest points XDG_CONFIG_HOME at the test's tmp_path/config.
    from orchestrator.config.paths import user_config_file

    path = user_config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _write_workspace(workspace: Path, text: str) -> Path:
    path = config_file(workspace)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_the_defaults(tmp_path: Path) -> None:
    web = load_config(tmp_path).web
    assert (web.search, web.fetch, web.max_uses) == ("auto", "auto", 8)
    assert web.allowed_domains == [] and web.blocked_domains == []


def test_both_domain_lists_are_one_error_that_says_what_to_do(tmp_path: Path) -> None:
    user = _write_user('[web]\nallowed_domains = ["a.org"]\nblocked_domains = ["b.org"]\n')
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    message = str(caught.value)
    assert message.startswith(f"{user}: web: ")
    assert "allowed_domains and blocked_domains are both set" in message
    assert "keep one of the two lists" in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ('search = "sometimes"', "web.search"),
        ('fetch = "remote"', "web.fetch"),
        ("max_uses = 0", "web.max_uses"),
        ("max_uses = 101", "web.max_uses"),
        ('allowed_domains = ["https://example.com"]', "write it bare"),
        ('blocked_domains = [""]', "is not a domain"),
        ('blocked_domains = ["a b.com"]', "is not a domain"),
        ("colour = 1", "web.colour"),
    ],
)
def test_bad_web_values_are_config_errors(tmp_path: Path, line: str, says: str) -> None:
    _write_user(f"[web]\n{line}\n")
    with pytest.raises(ConfigError, match=says.replace(".", r"\.")):
        load_config(tmp_path)


def test_a_workspace_may_turn_search_and_fetch_off(tmp_path: Path) -> None:
    _write_user('[web]\nsearch = "on"\nfetch = "server"\n')
    _write_workspace(tmp_path, '[web]\nsearch = "off"\nfetch = "off"\n')
    config = load_config(tmp_path)
    assert (config.web.search, config.web.fetch) == ("off", "off")
    assert config.load_warnings == []


@pytest.mark.parametrize(
    ("user", "workspace", "key"),
    [
        ('search = "off"', 'search = "on"', "web.search"),
        ('search = "off"', 'search = "auto"', "web.search"),
        ('fetch = "off"', 'fetch = "local"', "web.fetch"),
        ('fetch = "server"', 'fetch = "local"', "web.fetch"),
        ("max_uses = 3", "max_uses = 50", "web.max_uses"),
        ("", "max_uses = 9", "web.max_uses"),
        ("", 'allowed_domains = ["attacker.example"]', "web.allowed_domains"),
        (
            'allowed_domains = ["docs.python.org"]',
            'blocked_domains = ["x.org"]',
            "web.blocked_domains",
        ),
    ],
)
def test_a_workspace_cannot_widen_the_web(
    tmp_path: Path, user: str, workspace: str, key: str
) -> None:
    _write_user(f"[web]\n{user}\n")
    path = _write_workspace(tmp_path, f"[web]\n{workspace}\n")
    mine = load_config(_empty(tmp_path)).web
    config = load_config(tmp_path)
    assert config.web == mine  # the user's values stand
    [warning] = config.load_warnings
    assert str(path) in warning and key in warning


def _empty(tmp_path: Path) -> Path:
    plain = tmp_path / "plain"
    plain.mkdir(exist_ok=True)
    return plain


def test_a_workspace_may_lower_max_uses_and_add_blocked_domains(tmp_path: Path) -> None:
    _write_user('[web]\nmax_uses = 5\nblocked_domains = ["a.org"]\n')
    _write_workspace(tmp_path, '[web]\nmax_uses = 2\nblocked_domains = ["b.org", "a.org"]\n')
    config = load_config(tmp_path)
    assert config.web.max_uses == 2
    assert config.web.blocked_domains == ["a.org", "b.org"]  # added to, never replaced
    assert config.load_warnings == []


def test_an_empty_workspace_allow_list_does_not_drop_the_users(tmp_path: Path) -> None:
    _write_user('[web]\nallowed_domains = ["docs.python.org"]\n')
    _write_workspace(tmp_path, "[web]\nallowed_domains = []\n")
    assert load_config(tmp_path).web.allowed_domains == ["docs.python.org"]


def test_a_workspace_cannot_empty_the_users_blocked_list(tmp_path: Path) -> None:
    _write_user('[web]\nblocked_domains = ["a.org"]\n')
    _write_workspace(tmp_path, "[web]\nblocked_domains = []\n")
    assert load_config(tmp_path).web.blocked_domains == ["a.org"]


@pytest.mark.parametrize(
    ("flag", "configured", "expected"),
    [
        ("on", 'search = "off"\nfetch = "local"', ("on", "local")),
        ("on", "", ("on", "auto")),
        ("off", 'search = "on"\nfetch = "server"', ("off", "off")),
        (None, 'search = "on"\nfetch = "local"', ("on", "local")),
    ],
)
def test_the_web_flag(
    tmp_path: Path, flag: str | None, configured: str, expected: tuple[str, str]
) -> None:
    _write_user(f"[web]\n{configured}\n")
    config = load_config(tmp_path, **PodSettings(web=flag).overrides())
    assert (config.web.search, config.web.fetch) == expected


def test_the_web_flag_wins_over_a_workspaces_off(tmp_path: Path) -> None:
    # The command line is the user's: it comes after the workspace's file.
    _write_workspace(tmp_path, '[web]\nsearch = "off"\n')
    config = load_config(tmp_path, **StartOptions(web="on").overrides())
    assert config.web.search == "on"


def test_the_web_flag_reaches_pod_serve_and_is_named_when_ignored() -> None:
    options = StartOptions(web="off")
    assert options.serve_args(None)[-2:] == ["--web", "off"]
    assert "--web" in options.settings_given()


@pytest.mark.parametrize("command", ["chat", "run", "serve", "acp"])
def test_every_starting_command_takes_the_web_flag(command: str) -> None:
    from cli.main import app

    runner = CliRunner()
    help_text = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"}).output
    assert "--web" in help_text
    bad = runner.invoke(app, [command, "--web", "maybe"])
    assert bad.exit_code == 2
    assert "'maybe' is not on or off" in bad.output
