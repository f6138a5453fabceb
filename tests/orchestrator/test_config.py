"""Pod configuration: the tool-environment keys are checked where they are read."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.config import ConfigError, load_config
from orchestrator.tools.environment import DEFAULT_ALLOW


def _write(workspace: Path, text: str) -> None:
    (workspace / ".pod").mkdir()
    (workspace / ".pod" / "config.toml").write_text(text)


def test_tool_environment_keys_load(tmp_path: Path) -> None:
    _write(tmp_path, 'tool_env_allow = ["PROJECT_*", "NPM_TOKEN", "*"]\ntool_env = { CI = "1" }\n')
    config = load_config(tmp_path)
    assert config.tool_env_allow == ["PROJECT_*", "NPM_TOKEN", "*"]
    assert config.tool_env == {"CI": "1"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('tool_env_allow = ["NOT-A-NAME"]', "tool_env_allow: Value error, 'NOT-A-NAME' is not"),
        ('tool_env_allow = ["*_TOKEN"]', "'*_TOKEN' is not a variable name or a NAME_PREFIX*"),
        ('tool_env = { "1ST" = "x" }', "tool_env: Value error, '1ST' is not a variable name"),
        ('tool_env = { A = "x\\u0000y" }', "the value of A contains a NUL byte"),
    ],
)
def test_bad_tool_environment_keys_are_config_errors(
    tmp_path: Path, text: str, message: str
) -> None:
    _write(tmp_path, text + "\n")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert message in str(caught.value)


def test_the_documented_defaults_are_the_real_ones() -> None:
    source = (Path(__file__).parents[2] / "orchestrator" / "config.py").read_text("utf-8")
    documented = source[source.index("tool_env_allow: list[str]") :].split('"""')[1]
    assert f"defaults ({', '.join(DEFAULT_ALLOW)})" in " ".join(documented.split())
