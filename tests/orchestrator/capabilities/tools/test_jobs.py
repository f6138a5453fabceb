"""The job tools against real background jobs: bash starts one, job_output reads it from an
offset, job_wait waits (and a cancelled wait leaves the job alone), job_kill ends it; the tools
come only with bash, and their permission kinds."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from orchestrator.adapters.scoped_fs import ScopedFS
from orchestrator.capabilities.jobs import Jobs, JobSpools
from orchestrator.capabilities.permissions import Policy
from orchestrator.capabilities.tools.base import ToolContext, ToolError, tool_kind
from orchestrator.capabilities.tools.bash import BashTool
from orchestrator.capabilities.tools.jobs import JobKillTool, JobOutputTool, JobWaitTool
from orchestrator.capabilities.tools.registry import default_registry
from orchestrator.config.model import PodConfig
from orchestrator.config.permissions import PermissionsConfig
from orchestrator.config.sections import JobsConfig

TICKS = "for i in $(seq 1 100); do echo tick $i; sleep 0.1; done"


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(
        fs=ScopedFS(tmp_path), workspace=tmp_path, scratch_dir=tmp_path / "s", call_id="toolu_7"
    )


@pytest.fixture
def jobs(tmp_path: Path) -> Jobs:
    return Jobs(limits=JobsConfig(max_jobs=2), spools=JobSpools(tmp_path / "s.jsonl"))


def _bash(jobs: Jobs) -> BashTool:
    bash = BashTool()
    bash.jobs = jobs
    return bash


async def test_bash_starts_a_job_and_returns_at_once(jobs: Jobs, ctx: ToolContext) -> None:
    out = await _bash(jobs).run({"command": "sleep 300", "background": True, "timeout_s": 1}, ctx)
    assert out.summary == "bash: started background job j1: sleep 300"
    assert out.content is not None
    assert 'job_output(id="j1")' in out.content
    assert out.content.endswith("(timeout_s does not apply to background jobs)")
    [job] = jobs.running()
    assert job.call_id == "toolu_7"
    await asyncio.sleep(1.2)  # past the timeout it was given: no timeout applies
    assert job.running
    await jobs.close()


async def test_output_is_read_from_offsets_then_the_job_is_killed(
    jobs: Jobs, ctx: ToolContext
) -> None:
    await _bash(jobs).run({"command": TICKS, "background": True}, ctx)
    output = JobOutputTool(jobs, max_bytes=16_384)
    wait = JobWaitTool(jobs, max_bytes=16_384, default_timeout_s=30, max_timeout_s=120)
    waited = await wait.run({"id": "j1", "timeout_s": 0.5}, ctx)
    assert re.match(
        r"job_wait j1: running for \d+ s; bytes 0-\d+ of \d+; next since=\d+", waited.summary
    )
    assert waited.content is not None and waited.content.startswith("tick 1\n")
    since = int(waited.summary.rpartition("since=")[2])
    later = await output.run({"id": "j1", "since": since}, ctx)
    assert later.summary.startswith("job_output j1: running for ")
    killed = await JobKillTool(jobs, max_bytes=16_384).run({"id": "j1"}, ctx)
    assert re.match(
        r"job_kill j1: ended it: it was killed after [\d.]+ s \(\d+ B output\); its last \d+ bytes follow",
        killed.summary,
    )
    assert killed.content is not None and "tick" in killed.content
    again = await JobKillTool(jobs, max_bytes=16_384).run({"id": "j1"}, ctx)
    assert again.summary.startswith("job_kill j1: it was not running: it was killed after ")
    await jobs.close()


async def test_a_pause_stops_the_wait_not_the_job(jobs: Jobs, ctx: ToolContext) -> None:
    await _bash(jobs).run({"command": TICKS, "background": True}, ctx)
    wait = JobWaitTool(jobs, max_bytes=16_384, default_timeout_s=30, max_timeout_s=120)
    waiting = asyncio.ensure_future(wait.run({"id": "j1"}, ctx))
    await asyncio.sleep(0.2)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    [job] = jobs.running()
    seen = job.kept_bytes
    for _ in range(500):
        if job.kept_bytes > seen:
            break
        await asyncio.sleep(0.02)
    assert job.running and job.kept_bytes > seen
    await jobs.close()


async def test_a_finished_job_says_how_it_ended(jobs: Jobs, ctx: ToolContext) -> None:
    await _bash(jobs).run({"command": "echo out; exit 4", "background": True}, ctx)
    wait = JobWaitTool(jobs, max_bytes=16_384, default_timeout_s=30, max_timeout_s=120)
    done = await wait.run({"id": "j1", "timeout_s": 20}, ctx)
    assert re.match(r"job_wait j1: exited 4 after [\d.]+ s; bytes 0-4 of 4$", done.summary)
    assert done.content == "out\n"
    assert jobs.take_notes() == []  # the result told the model already
    nothing = await wait.run({"id": "j1", "timeout_s": 1}, ctx)
    assert "no new output (it has 4 bytes)" in nothing.summary
    await jobs.close()


async def test_errors_the_model_can_act_on(jobs: Jobs, ctx: ToolContext) -> None:
    output = JobOutputTool(jobs, max_bytes=16_384)
    with pytest.raises(ToolError, match="no background job 'j1'; none"):
        await output.run({"id": "j1"}, ctx)
    with pytest.raises(ToolError, match="argument 'since' must be at least 0"):
        await output.run({"id": "j1", "since": -1}, ctx)
    with pytest.raises(ToolError, match="background jobs are not available here"):
        await BashTool().run({"command": "true", "background": True}, ctx)
    bash = _bash(jobs)
    await bash.run({"command": "sleep 300", "background": True}, ctx)
    await bash.run({"command": "sleep 300", "background": True}, ctx)
    with pytest.raises(ToolError, match=r"not started: 2 background jobs run already"):
        await bash.run({"command": "true", "background": True}, ctx)
    await jobs.close()


def test_job_tools_come_only_with_bash(tmp_path: Path) -> None:
    jobs = Jobs(limits=JobsConfig(), spools=JobSpools(tmp_path / "s.jsonl"))
    with_bash = default_registry(PodConfig(workspace=tmp_path, allow_bash=True), jobs=jobs)
    assert {"job_output", "job_wait", "job_kill"} <= set(with_bash.names())
    bash = with_bash.get("bash")
    assert isinstance(bash, BashTool) and bash.jobs is jobs
    denied = PermissionsConfig(deny=["bash"])
    without = default_registry(PodConfig(workspace=tmp_path, permissions=denied), jobs=jobs)
    assert not {"bash", "job_output", "job_wait", "job_kill"} & set(without.names())
    read_only = PermissionsConfig(mode="read-only")
    without = default_registry(PodConfig(workspace=tmp_path, permissions=read_only), jobs=jobs)
    assert not {"bash", "job_output", "job_wait", "job_kill"} & set(without.names())


@pytest.mark.parametrize(
    ("mode", "verdicts"),
    [
        ("default", ["allow", "allow", "ask"]),
        ("accept-edits", ["allow", "allow", "allow"]),
        ("yolo", ["allow", "allow", "allow"]),
    ],
)
def test_permission_kinds(tmp_path: Path, mode: str, verdicts: list[str]) -> None:
    jobs = Jobs(limits=JobsConfig(), spools=JobSpools(tmp_path / "s.jsonl"))
    policy = Policy.from_config(PermissionsConfig(mode=mode))  # type: ignore[arg-type]
    tools = [
        JobOutputTool(jobs, max_bytes=1024),
        JobWaitTool(jobs, max_bytes=1024, default_timeout_s=1, max_timeout_s=1),
        JobKillTool(jobs, max_bytes=1024),
    ]
    decided = [policy.decide(t.name, tool_kind(t), {"id": "j1"}).verdict for t in tools]
    assert decided == verdicts
    assert [t.side_effects for t in tools] == [False, False, False]


def test_a_timeout_ceiling_shortens_what_is_asked_and_states_itself() -> None:
    from orchestrator.capabilities.tools.timeouts import TimeoutCeiling

    ceiling = TimeoutCeiling.of(500, 90)
    assert ceiling.default_s == 90  # a default above the ceiling is lowered to it
    assert (ceiling.seconds(None), ceiling.seconds(10), ceiling.seconds(1000)) == (90, 10, 90)
    assert ceiling.schema("Seconds to wait at most")["timeout_s"] == {
        "maximum": 90,
        "description": "Seconds to wait at most (default 90, at most 90).",
    }
