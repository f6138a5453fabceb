"""What a workspace's ``.pod/config.toml`` may set: every key classified, every grant refused."""

from __future__ import annotations

import re
import tomllib
from fnmatch import fnmatchcase
from pathlib import Path

import pytest

from orchestrator.config.doc import rows
from orchestrator.config.grants import GRANTS, WORKSPACE_KEYS
from orchestrator.config.loading import ConfigError, load_config
from orchestrator.config.paths import config_file
from tests.faults.hostile_repo import HOSTILE_TOML, USER_TOML, make_hostile_repo

DOC = Path(__file__).resolve().parents[3] / "docs" / "configuration.md"


def _keys(table: dict[str, object], prefix: str = "") -> set[str]:
    """Dotted keys of a TOML table; the entries of ``mcp.servers`` and ``prices`` as <name>."""
    out: set[str] = set()
    for key, value in table.items():
        where = f"{prefix}{key}"
        if prefix in ("mcp.servers.", "prices.", "agents."):
            where = f"{prefix}<name>"
        tables_of_values = ("tool_output_overrides", "tool_env", "mcp.servers.<name>.env")
        if isinstance(value, dict) and where not in (
            *tables_of_values,
            "mcp.servers.<name>.headers",
        ):
            out |= _keys(value, f"{where}.")
        else:
            out.add(where)
    return out


def test_every_key_is_either_a_grant_or_a_workspace_key() -> None:
    keys = {key for key, *_ in rows()}
    assert set(GRANTS) | set(WORKSPACE_KEYS) == keys
    assert set(GRANTS) & set(WORKSPACE_KEYS) == set()
    assert all(len(why) > 20 for why in WORKSPACE_KEYS.values())


def test_the_hostile_repository_sets_every_key() -> None:
    hostile = _keys(tomllib.loads(HOSTILE_TOML.format(outside="/o", marker="/m")))
    assert hostile == {key for key, *_ in rows()}


def test_the_grants_are_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    grants_section = text.split("## Grants", 1)[1].split("\n## ", 1)[0]
    rows_ = set(re.findall(r"^\| `([^`]+)` \|", grants_section, flags=re.M))
    # A row may stand for a whole table: `mcp.servers.<name>.*`.
    covered = {key for key in GRANTS for row in rows_ if fnmatchcase(key, row)}
    assert covered == set(GRANTS)
    assert all(any(fnmatchcase(key, row) for key in GRANTS) for row in rows_)


def test_a_hostile_workspace_file_keeps_only_tuning(tmp_path: Path) -> None:
    repo = make_hostile_repo(tmp_path, tmp_path / "run")
    user = tmp_path / "config" / "pod" / "config.toml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(USER_TOML)
    config = load_config(repo.workspace)
    # The baseline is the same user's config over an empty workspace.
    plain = tmp_path / "plain"
    plain.mkdir()
    default = load_config(plain)
    for key in GRANTS:
        top, _, leaf = key.partition(".")
        if top == "permissions":
            continue  # checked below: its ask and deny rules are kept
        if leaf and "<name>" not in key:  # a table whose other keys a workspace may set
            assert (
                getattr(config, top).model_dump()[leaf] == getattr(default, top).model_dump()[leaf]
            ), key
            continue
        assert getattr(config, top) == getattr(default, top), key
    # What it may do still applies.
    assert (config.model, config.max_rounds, config.prompt_cache) == (
        "claude-from-the-repo",
        3,
        "off",
    )
    assert config.permissions.mode == "default" and config.permissions.allow == []
    assert "read_file(secrets/**)" in config.permissions.deny  # narrowing is kept
    assert config.inject_resident_knowledge is False
    assert config.checkpoints is False  # turning checkpoints off narrows: kept
    assert config.subpods.child_max_tokens == 1000 and config.max_turn_tokens == 100000
    assert config.agents["helper"].tools == ["read_file"]  # narrows a child: kept
    # Money: the repository's zero prices are dropped, its budget above the user's too; its
    # lower turn budget narrows, so it is kept.
    assert config.model_prices("claude-from-the-repo") == default.model_prices(
        "claude-from-the-repo"
    )
    assert config.model_prices("claude-from-the-repo").input == 3.0  # type: ignore[union-attr]
    assert (config.budget_usd, config.turn_budget_usd) == (5.0, 0.5)
    assert (config.checkpoint_max_file_bytes, config.checkpoint_max_total_bytes) == (1000, 100000)
    [warning] = config.load_warnings
    for key in (
        "name",
        "provider",
        "scripted_script",
        "session",
        "socket",
        "parent_socket",
        "telemetry",
        "prices",
        "budget_usd",
    ):
        assert re.search(rf"\b{re.escape(key)}\b", warning), key
    assert not re.search(r"\bturn_budget_usd\b", warning)
    assert config.pod_name() == "repo"


@pytest.mark.parametrize("name", ["../../tmp/victim/data", "a/b", "..", ".hidden", "x" * 65, "a b"])
def test_a_name_that_is_not_a_plain_word_is_refused_from_any_source(
    tmp_path: Path, name: str
) -> None:
    with pytest.raises(ConfigError, match=r"^command line: name: "):
        load_config(tmp_path, name=name)
    user = Path(tmp_path / "config" / "pod" / "config.toml")
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(f"name = {name!r}\n".replace("'", '"'))
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(user))}: name: "):
        load_config(tmp_path)


@pytest.mark.parametrize(
    ("folder", "expected"),
    [
        ("my project", "my-project"),
        ("..x", "x"),
        ("ünï", "n"),
        ("-", "pod"),
        ("a.b_c-1", "a.b_c-1"),
    ],
)
def test_the_default_name_is_the_folder_name_made_safe(
    tmp_path: Path, folder: str, expected: str
) -> None:
    workspace = tmp_path / folder
    workspace.mkdir()
    assert load_config(workspace).pod_name() == expected
    assert not config_file(workspace).exists()


@pytest.mark.parametrize(
    "line",
    [
        "max_rounds = 0",
        "provider_max_retries = 1000",
        "max_tokens = -1",
        "bash_timeout_s = 0",
        "checkpoint_max_file_bytes = 0",
        "checkpoint_max_file_bytes = 1099511627776",
        "checkpoint_max_total_bytes = -1",
        "checkpoint_max_total_bytes = 1125899906842624",
    ],
)
def test_tuning_stays_within_bounds(tmp_path: Path, line: str) -> None:
    path = config_file(tmp_path)
    path.parent.mkdir()
    path.write_text(line + "\n")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}: {line.split()[0]}: "):
        load_config(tmp_path)


@pytest.mark.parametrize(
    "line",
    ["max_jobs = 0", "max_jobs = 65", "max_spool_bytes = 0", "max_spool_bytes = 1073741825"],
)
def test_job_limits_stay_within_bounds(tmp_path: Path, line: str) -> None:
    path = config_file(tmp_path)
    path.parent.mkdir()
    path.write_text(f"[jobs]\n{line}\n")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}: jobs\.{line.split()[0]}: "):
        load_config(tmp_path)


def test_a_workspace_may_only_narrow_skills(tmp_path: Path) -> None:
    user = tmp_path / "config" / "pod" / "config.toml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text("[skills]\nenabled = false\nprompt_max_chars = 500\n")
    widening = tmp_path / "widening"
    config_file(widening).parent.mkdir(parents=True)
    config_file(widening).write_text(
        "[skills]\nenabled = true\nclaude_dirs = true\nprompt_max_chars = 90000\n"
    )
    config = load_config(widening)
    assert (config.skills.enabled, config.skills.prompt_max_chars) == (False, 500)
    [warning] = config.load_warnings
    assert "skills.enabled" in warning and "skills.prompt_max_chars" in warning
    narrowing = tmp_path / "narrowing"
    config_file(narrowing).parent.mkdir(parents=True)
    config_file(narrowing).write_text("[skills]\nclaude_dirs = false\nprompt_max_chars = 100\n")
    narrowed = load_config(narrowing)
    assert (narrowed.skills.claude_dirs, narrowed.skills.prompt_max_chars) == (False, 100)
    assert narrowed.load_warnings == []
