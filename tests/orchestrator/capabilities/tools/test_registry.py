"""The tool registry, the default tool set, and the package's public surface."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import orchestrator.capabilities.tools
from orchestrator.adapters.scoped_fs import ScopedFS
from orchestrator.capabilities.tools import (
    BashTool,
    GrepTool,
    ReadFileTool,
    ToolContext,
    ToolOutput,
    ToolRegistry,
    default_registry,
)
from orchestrator.capabilities.tools.web_fetch import WebFetchTool
from orchestrator.config.model import PodConfig


class EchoTool:
    """A stand-in for a tool built elsewhere (the knowledge tools)."""

    def __init__(self, name: str = "echo") -> None:
        self.name = name
        self.description = "Echo the text."
        self.side_effects = False
        self.input_schema: dict[str, Any] = {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        }

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput | str:
        return str(args["text"])


def test_specs_are_the_wire_form_sorted_by_name() -> None:
    registry = ToolRegistry()
    registry.register(EchoTool("zeta"))
    registry.register(EchoTool("alpha"))
    assert registry.specs() == [
        {
            "name": name,
            "description": "Echo the text.",
            "input_schema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
        }
        for name in ("alpha", "zeta")
    ]
    assert registry.names() == ["alpha", "zeta"]
    assert [tool.name for tool in registry] == ["alpha", "zeta"]
    assert len(registry) == 2


def test_specs_follow_registrations_and_removals() -> None:
    registry = ToolRegistry([EchoTool("a")])
    first = registry.specs()
    first.append({"name": "stray"})  # a caller's list is its own
    assert [spec["name"] for spec in registry.specs()] == ["a"]
    registry.register(EchoTool("b"))
    assert [spec["name"] for spec in registry.specs()] == ["a", "b"]
    registry.unregister("a")
    assert [spec["name"] for spec in registry.specs()] == ["b"]


def test_pods_with_the_same_limits_share_their_tool_schemas(tmp_path: Path) -> None:
    # A host builds hundreds of pods: each schema is built and held once.
    one = default_registry(PodConfig(workspace=tmp_path, allow_bash=True, bash_timeout_s=45))
    two = default_registry(PodConfig(workspace=tmp_path, allow_bash=True, bash_timeout_s=45))
    other = default_registry(PodConfig(workspace=tmp_path, allow_bash=True, bash_timeout_s=90))
    for name in ("read_file", "bash"):
        assert one.get(name).input_schema is two.get(name).input_schema  # type: ignore[union-attr]
    timeout = other.get("bash").input_schema["properties"]["timeout_s"]  # type: ignore[union-attr]
    assert timeout != one.get("bash").input_schema["properties"]["timeout_s"]  # type: ignore[union-attr]


def test_get_and_contains() -> None:
    tool = EchoTool()
    registry = ToolRegistry([tool])
    assert registry.get("echo") is tool
    assert registry.get("nope") is None
    assert "echo" in registry
    assert "nope" not in registry


def test_duplicate_names_are_refused() -> None:
    registry = ToolRegistry([EchoTool()])
    with pytest.raises(ValueError, match="'echo' is already registered"):
        registry.register(EchoTool())


def test_bash_is_offered_unless_the_permissions_deny_it(tmp_path: Path) -> None:
    everything = ["bash", "edit_file", "glob", "grep", "read_file", "write_file"]
    # The default mode offers bash and asks before each command.
    assert default_registry(PodConfig(workspace=tmp_path)).names() == everything
    denied = PodConfig(workspace=tmp_path, permissions={"deny": ["bash"]})
    assert default_registry(denied).names() == everything[1:]
    read_only = PodConfig(workspace=tmp_path, permissions={"mode": "read-only"})
    assert "bash" not in default_registry(read_only).names()
    # read-only wins over every allow (issue 27 §3): no allow rule or --allow-bash brings
    # bash back.
    some = {"mode": "read-only", "allow": ["bash(git status)"]}
    assert "bash" not in default_registry(PodConfig(workspace=tmp_path, permissions=some)).names()
    flag = PodConfig(workspace=tmp_path, allow_bash=True, permissions={"mode": "read-only"})
    assert default_registry(flag).names() == ["glob", "grep", "read_file"]


def test_web_fetch_is_offered_when_asked_for_read_only_too_unless_denied(
    tmp_path: Path,
) -> None:
    assert "web_fetch" not in default_registry(PodConfig(workspace=tmp_path)).names()
    config = PodConfig(workspace=tmp_path, tool_output_overrides={"web_fetch": 3000})
    fetch = default_registry(config, web_fetch=True).get("web_fetch")
    assert isinstance(fetch, WebFetchTool) and fetch.max_bytes == 3000
    read_only = PodConfig(workspace=tmp_path, permissions={"mode": "read-only"})
    assert "web_fetch" in default_registry(read_only, web_fetch=True).names()
    for rule in ("web_fetch", "WebFetch", "read"):
        denied = PodConfig(workspace=tmp_path, permissions={"deny": [rule]})
        assert "web_fetch" not in default_registry(denied, web_fetch=True).names()


def test_default_registry_with_bash_uses_the_configured_timeout(tmp_path: Path) -> None:
    registry = default_registry(PodConfig(workspace=tmp_path, allow_bash=True, bash_timeout_s=45))
    assert "bash" in registry.names()
    bash = registry.get("bash")
    assert isinstance(bash, BashTool)
    assert (bash.default_timeout_s, bash.max_timeout_s) == (45, 45)


async def test_default_registry_gives_bash_the_configured_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROJECT_MODE", "dev")
    monkeypatch.setenv("OTHER_MODE", "hidden")
    config = PodConfig(
        workspace=tmp_path, allow_bash=True, tool_env_allow=["PROJECT_*"], tool_env={"CI": "1"}
    )
    bash = default_registry(config).get("bash")
    assert bash is not None
    ctx = ToolContext(fs=ScopedFS(tmp_path), workspace=tmp_path, scratch_dir=tmp_path / "s")
    output = await bash.run({"command": "echo $PROJECT_MODE/$OTHER_MODE/$CI"}, ctx)
    assert isinstance(output, ToolOutput) and output.content == "dev//1\n"


def test_default_registry_applies_per_tool_caps(tmp_path: Path) -> None:
    config = PodConfig(
        workspace=tmp_path, tool_output_max_bytes=9000, tool_output_overrides={"grep": 2000}
    )
    registry = default_registry(config)
    read_file, grep = registry.get("read_file"), registry.get("grep")
    assert isinstance(read_file, ReadFileTool) and read_file.max_bytes == 9000
    assert isinstance(grep, GrepTool) and grep.max_bytes == 2000


def test_default_registry_takes_extra_tools(tmp_path: Path) -> None:
    extra = EchoTool("memory_read")
    registry = default_registry(PodConfig(workspace=tmp_path), extra=[extra])
    assert registry.get("memory_read") is extra
    with pytest.raises(ValueError, match="already registered"):
        default_registry(PodConfig(workspace=tmp_path), extra=[EchoTool("grep")])


def test_every_spec_is_an_object_schema_with_known_required_fields(tmp_path: Path) -> None:
    registry = default_registry(PodConfig(workspace=tmp_path, allow_bash=True))
    for spec in registry.specs():
        schema = spec["input_schema"]
        assert schema["type"] == "object", spec["name"]
        assert set(schema["required"]) <= set(schema["properties"]), spec["name"]
        assert spec["description"].strip(), spec["name"]


def test_all_is_complete_and_sorted() -> None:
    public = {
        name
        for name, value in vars(orchestrator.capabilities.tools).items()
        if not name.startswith("_") and not isinstance(value, type(orchestrator.capabilities.tools))
    }
    public.discard("annotations")
    assert set(orchestrator.capabilities.tools.__all__) == public
    assert orchestrator.capabilities.tools.__all__ == sorted(
        orchestrator.capabilities.tools.__all__
    )
