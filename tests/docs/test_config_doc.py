"""docs/configuration.md lists every config key exactly as PodConfig defines it today."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from pydantic import BaseModel

from orchestrator.config.doc import extract_block, generated_block, rows
from orchestrator.config.grants import GRANTS
from orchestrator.config.hooks import HooksConfig
from orchestrator.config.loading import load_config
from orchestrator.config.mcp import McpConfig, McpServerConfig
from orchestrator.config.model import HostConfig, PodConfig
from orchestrator.config.permissions import PermissionsConfig
from orchestrator.config.sandbox import SandboxConfig
from orchestrator.config.sections import BedrockConfig, JobsConfig, MemoryConfig, VertexConfig
from orchestrator.config.skills import SkillsConfig
from orchestrator.config.subpods import AgentConfig, SubpodsConfig
from orchestrator.config.telemetry import TelemetryConfig
from orchestrator.config.web import WebConfig
from orchestrator.core.prices import Prices

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
REFRESH = (
    "docs/configuration.md is stale; run: "
    "python -m orchestrator.config.doc --write-docs docs/configuration.md"
)


def test_the_key_reference_is_fresh() -> None:
    assert extract_block(DOC.read_text(encoding="utf-8")) == generated_block(), REFRESH


def test_every_key_has_a_meaning_and_grants_are_marked() -> None:
    table = {key: meaning for key, _, _, meaning in rows()}
    tables: dict[str, type[BaseModel]] = {
        "memory": MemoryConfig,
        "jobs": JobsConfig,
        "permissions": PermissionsConfig,
        "mcp.servers.<name>": McpServerConfig,
        "prices.<name>": Prices,
        "subpods": SubpodsConfig,
        "sandbox": SandboxConfig,
        "agents.<name>": AgentConfig,
        "hooks": HooksConfig,
        "host": HostConfig,
        "web": WebConfig,
        "telemetry": TelemetryConfig,
        "skills": SkillsConfig,
        "bedrock": BedrockConfig,
        "vertex": VertexConfig,
    }
    nested = (
        "workspace", "memory", "jobs", "permissions", "mcp", "prices", "subpods", "agents",
        "sandbox", "hooks", "host", "web", "telemetry", "skills", "bedrock", "vertex",
    )  # fmt: skip
    expected = {name for name in PodConfig.model_fields if name not in nested}
    expected |= {
        f"{table}.{name}" for table, model in tables.items() for name in model.model_fields
    }
    expected |= {f"mcp.{name}" for name in McpConfig.model_fields if name != "servers"}
    assert set(table) == expected
    assert [key for key, meaning in table.items() if len(meaning) < 20] == []
    assert {key for key, meaning in table.items() if "*A grant*" in meaning} == set(GRANTS)


def test_the_documented_examples_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = DOC.read_text(encoding="utf-8")
    blocks = text.split("```toml\n")[1:]
    assert blocks, "the document has no TOML example"
    for block in blocks:
        body = block.split("```", 1)[0]
        config_home = tmp_path / "config"
        (config_home / "pod").mkdir(parents=True, exist_ok=True)
        (config_home / "pod" / "config.toml").write_text(body)
        tomllib.loads(body)
        monkeypatch.setenv("XDG_CONFIG_HOME", str(config_home))
        load_config(tmp_path)
