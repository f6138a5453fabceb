"""The config floor stands on its own: its tables check themselves without the capabilities,
and reading a config loads neither the permission policy nor its shell parser."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from orchestrator.capabilities.permissions import Rule, bash_offered, pod_policy
from orchestrator.config.mcp import McpServerConfig, expand
from orchestrator.config.model import PodConfig
from orchestrator.config.permissions import PermissionsConfig, split_rule
from orchestrator.core.variables import referenced_variables, substitute

ROOT = Path(__file__).resolve().parents[3]


def test_reading_a_config_loads_no_capability(tmp_path: Path) -> None:
    probe = (
        "import json, sys; from pathlib import Path; "
        "from orchestrator.config.loading import load_config; "
        f"load_config(Path({str(tmp_path)!r})); "
        "print(json.dumps(sorted(m for m in sys.modules if m == 'bashlex' "
        "or m.startswith(('orchestrator.capabilities', 'orchestrator.adapters', "
        "'orchestrator.runtime', 'orchestrator.serving')))))"
    )
    env = {"PYTHONPATH": str(ROOT), "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("bash", ("bash", None)),
        (" bash(git push:*) ", ("bash", "git push:*")),
        ("read(.env)", ("read", ".env")),
        ("edit()", ("edit", "")),
    ],
)
def test_a_rule_splits_into_tool_and_subject(text: str, parts: tuple[str, str | None]) -> None:
    assert split_rule(text) == parts
    rule = Rule.parse(text)
    assert (rule.tool, rule.subject) == parts


@pytest.mark.parametrize("text", ["bash(ls", "(x)", "   "])
def test_a_malformed_rule_is_refused_by_the_table(text: str) -> None:
    with pytest.raises(ValueError):
        split_rule(text)
    with pytest.raises(ValidationError):
        PermissionsConfig(deny=[text])


def test_the_policy_of_a_config_reads_its_mcp_servers(tmp_path: Path) -> None:
    config = PodConfig(
        workspace=tmp_path,
        mcp={
            "servers": {
                "git": McpServerConfig(command="git-mcp", permission="allow"),
                "web": McpServerConfig(url="http://127.0.0.1:9/mcp", permission="deny"),
            }
        },
    )
    policy = pod_policy(config)
    assert policy.decide("mcp__git__log", "other", {}).verdict == "allow"
    assert policy.decide("mcp__web__get", "other", {}).verdict == "deny"
    assert bash_offered(config)
    refused = PodConfig(workspace=tmp_path, permissions=PermissionsConfig(deny=["bash"]))
    assert not bash_offered(refused)


def test_variables_are_filled_from_the_environment_given() -> None:
    value = "Bearer ${TOKEN}-${MISSING}"
    assert referenced_variables(value) == ["TOKEN", "MISSING"]
    assert substitute(value, {"TOKEN": "abc"}) == "Bearer abc-"
    assert expand(value, {"TOKEN": "xyz"}) == "Bearer xyz-"
