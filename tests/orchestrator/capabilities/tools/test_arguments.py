"""Tool arguments as pydantic models: the schemas sent to the model, and the errors it reads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

from orchestrator.adapters.scoped_fs import ScopedFS
from orchestrator.capabilities.jobs import Jobs, JobSpools
from orchestrator.capabilities.tools.arguments import ToolArgs, TypedTool, parse_args, schema_of
from orchestrator.capabilities.tools.base import Tool, ToolContext, ToolError, ToolOutput
from orchestrator.capabilities.tools.knowledge import KnowledgeSearchTool, MemoryReadTool
from orchestrator.capabilities.tools.registry import default_registry
from orchestrator.capabilities.tools.todos import TodoWriteTool
from orchestrator.config.model import PodConfig
from orchestrator.core.todos import Todo


class _NoKeeper:
    async def write(self, call_id: str, todos: tuple[Todo, ...]) -> None:
        """Nothing: the schema does not depend on where the list is kept."""


SNAPSHOT = Path(__file__).with_name("tool_specs.json")
"""Every built-in tool's spec exactly as sent; set UPDATE_TOOL_SPECS=1 to rewrite it."""

REPO = Path(__file__).resolve().parents[4]


def specs_json() -> str:
    """All built-in tools' specs (bash allowed, default config) as the snapshot holds them."""
    memory = Path("/nonexistent-memory-root")  # the schemas do not depend on it
    config = PodConfig(workspace=Path("/nonexistent-workspace"), allow_bash=True)
    jobs = Jobs(limits=config.jobs, spools=JobSpools(Path("/nonexistent-session.jsonl")))
    extra = [KnowledgeSearchTool(memory), MemoryReadTool(memory), TodoWriteTool(_NoKeeper())]
    registry = default_registry(config, extra=extra, jobs=jobs, web_fetch=True)
    return json.dumps(registry.specs(), indent=2, ensure_ascii=False) + "\n"


def test_every_tool_spec_matches_the_snapshot() -> None:
    current = specs_json()
    if os.environ.get("UPDATE_TOOL_SPECS") == "1":
        SNAPSHOT.write_text(current, encoding="utf-8")
    # Compared as text: dict equality would not notice a change of key order, and the
    # request bytes (hence prompt caching) depend on it.
    assert current == SNAPSHOT.read_text(encoding="utf-8")


@pytest.mark.parametrize("seed", ["1", "2"])
def test_specs_are_the_same_bytes_in_another_process(seed: str) -> None:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    code = (
        "import sys; from tests.orchestrator.capabilities.tools.test_arguments import specs_json; "
        "sys.stdout.write(specs_json())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == specs_json()


def test_every_schema_is_what_the_messages_api_wants() -> None:
    for spec in json.loads(specs_json()):
        schema = spec["input_schema"]
        assert list(schema) == ["type", "properties", "required", "additionalProperties"]
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert set(schema["required"]) <= set(schema["properties"]), spec["name"]
        for name, prop in schema["properties"].items():
            assert prop["description"].strip(), (spec["name"], name)
            assert {"title", "anyOf", "$ref"}.isdisjoint(prop), (spec["name"], name)
            if prop["type"] == "array":  # todo_write's list: flat objects, described too
                items = prop["items"]
                assert items["type"] == "object" and items["additionalProperties"] is False
                assert set(items["required"]) <= set(items["properties"])
                for field, sub in items["properties"].items():
                    assert sub["description"].strip(), (spec["name"], name, field)
                    assert sub["type"] in {"string", "integer", "number", "boolean"}
                continue
            assert prop["type"] in {"string", "integer", "number", "boolean"}


# -- validation -------------------------------------------------------------------------------


class Sample(ToolArgs):
    """Arguments of every kind the built-in tools use."""

    name: str = Field(description="A name.")
    count: int | None = Field(None, ge=1, le=9, description="How many.")
    seconds: float | None = Field(None, gt=0, description="How long.")
    flag: bool = Field(False, description="Whether.")


def test_schema_of_optional_arguments_is_their_plain_type() -> None:
    assert schema_of(Sample)["properties"] == {
        "name": {"type": "string", "description": "A name."},
        "count": {"type": "integer", "minimum": 1, "maximum": 9, "description": "How many."},
        "seconds": {"type": "number", "exclusiveMinimum": 0, "description": "How long."},
        "flag": {"type": "boolean", "default": False, "description": "Whether."},
    }
    assert schema_of(Sample)["required"] == ["name"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"name": "a", "count": 3.0}, Sample(name="a", count=3)),
        ({"name": "a", "seconds": 2}, Sample(name="a", seconds=2.0)),
        ({"name": "a", "count": None, "seconds": None}, Sample(name="a")),
        ({"name": "a", "flag": True}, Sample(name="a", flag=True)),
    ],
)
def test_valid_arguments(args: dict[str, Any], expected: Sample) -> None:
    parsed = parse_args(Sample, args)
    assert parsed == expected
    assert type(parsed.count) is type(expected.count)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "missing required argument 'name'"),
        ({"name": None}, "missing required argument 'name'"),
        ({"name": 3}, "argument 'name' must be a string, got int"),
        ({"name": "a", "count": 2.5}, "argument 'count' must be an integer, got 2.5"),
        ({"name": "a", "count": True}, "argument 'count' must be an integer, got True"),
        ({"name": "a", "count": "3"}, "argument 'count' must be an integer, got '3'"),
        ({"name": "a", "count": 0}, "argument 'count' must be at least 1, got 0"),
        ({"name": "a", "count": 10}, "argument 'count' must be at most 9, got 10"),
        ({"name": "a", "seconds": 0}, "argument 'seconds' must be a positive number, got 0"),
        (
            {"name": "a", "seconds": False},
            "argument 'seconds' must be a positive number, got False",
        ),
        ({"name": "a", "flag": "yes"}, "argument 'flag' must be true or false, got 'yes'"),
        ({"name": "a", "flag": 1}, "argument 'flag' must be true or false, got 1"),
        (
            {"name": "a", "cuont": 2},
            "unknown argument 'cuont'; the arguments are: name, count, seconds, flag",
        ),
        (
            {"count": "x" * 100},
            "missing required argument 'name'; "
            f"argument 'count' must be an integer, got '{'x' * 59}…",
        ),
        ([1, 2], "the arguments must be a JSON object, got list"),
    ],
)
def test_invalid_arguments_say_what_to_change(args: Any, message: str) -> None:
    with pytest.raises(ToolError) as info:
        parse_args(Sample, args)
    assert str(info.value) == message


def test_a_schema_without_descriptions_is_refused() -> None:
    class Bare(ToolArgs):
        path: str

    with pytest.raises(TypeError, match=r"Bare\.path has no description"):
        schema_of(Bare)


def test_overrides_must_name_an_argument() -> None:
    with pytest.raises(TypeError, match="no argument 'nmae'"):
        schema_of(Sample, {"nmae": {"maximum": 3}})


# -- the typed tool base ----------------------------------------------------------------------


class Counter(TypedTool[Sample]):
    """A tool that reports the arguments it was given."""

    name = "counter"
    description = "Count."
    side_effects = False
    args_model = Sample

    async def execute(self, args: Sample, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(summary=f"{args.name} x{args.count}")


async def test_run_validates_then_executes_with_the_model(tmp_path: Path) -> None:
    tool: Tool = Counter(schema_overrides={"count": {"description": "At most 9."}})
    ctx = ToolContext(fs=ScopedFS(tmp_path), workspace=tmp_path, scratch_dir=tmp_path / "s")
    assert await tool.run({"name": "a", "count": 4.0}, ctx) == ToolOutput(summary="a x4")
    assert tool.input_schema["properties"]["count"]["description"] == "At most 9."
    with pytest.raises(ToolError, match="missing required argument 'name'"):
        await tool.run({}, ctx)
