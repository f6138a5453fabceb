"""Background jobs through the socket, with real processes: poll and kill, a pause that leaves
the job running, a shutdown that ends it, and a kill -9 whose restart reports it once."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
from pathlib import Path
from typing import Any

from orchestrator.adapters.procs.supervisor import proc_stat
from orchestrator.adapters.providers.base import ProviderRequest
from orchestrator.adapters.providers.scripted import ScriptedProvider
from orchestrator.adapters.session import JobRecord
from orchestrator.serving.client import PodClient
from tests.e2e.harness import (
    ScriptedReply,
    ScriptedToolCall,
    collect_until,
    running_pod,
    start_pod_process,
)
from tests.processes import gone, kill_all, unique_seconds, wait_running

TICKS = "for i in $(seq 1 100); do echo tick $i; sleep 0.1; done"


def _group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


async def _until_group_gone(pgid: int, within_s: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + within_s
    while not _group_gone(pgid):
        assert asyncio.get_running_loop().time() < deadline, f"process group {pgid} lives on"
        await asyncio.sleep(0.02)


def _pgid_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rpartition(")")[2].split()[2])


def _results(request: ProviderRequest) -> list[dict[str, Any]]:
    """The tool results the last message of a request carries."""
    content = request.messages[-1]["content"]
    if isinstance(content, str):
        return []
    return [block for block in content if block.get("type") == "tool_result"]


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [])


def _call(name: str, **arguments: Any) -> ScriptedReply:
    return ScriptedReply(tool_calls=[ScriptedToolCall(name=name, input=arguments)])


class Poller:
    """A model that starts the ticking job, polls its output until it has seen it grow, then
    kills it: decided from what each tool result says, never from the clock."""

    def __init__(self) -> None:
        self.outputs: list[str] = []
        self.pgid: int | None = None
        self.killed = ""

    def __call__(self, request: ProviderRequest) -> ScriptedReply:
        results = _results(request)
        if not results:
            command = f"echo pgid $(cut -d' ' -f5 /proc/$$/stat); {TICKS}"
            return _call("bash", command=command, background=True)
        text = _result_text(results[-1])
        if text.startswith("job_kill"):
            self.killed = text
            return ScriptedReply(text="killed it")
        if text.startswith("job_output"):
            self.outputs.append(text)
            found = re.search(r"pgid (\d+)", text)
            if found is not None:
                self.pgid = int(found.group(1))
            ticks = [n for text in self.outputs if (n := text.count("tick "))]
            if len(ticks) >= 2 and ticks[-1] > ticks[0]:
                return _call("job_kill", id="j1")
            return _call("job_wait", id="j1", timeout_s=0.3)
        return _call("job_output", id="j1")  # after bash's result, or a job_wait's


async def test_a_background_job_is_polled_then_killed(workspace: Path, short_dir: Path) -> None:
    model = Poller()
    provider = ScriptedProvider(responder=model)
    async with running_pod(
        workspace, short_dir, provider=provider, allow_bash=True, max_rounds=100
    ) as served:
        c = await served.client()
        await c.send("run", {"input": "start the ticker, watch it, stop it"})
        events = await collect_until(c, "run_end", timeout=60)
        assert events[-1].data == {"result": "finished"}, model.outputs
        started = next(
            e for e in events if e.event == "tool_result" and e.data["summary"].startswith("bash")
        )
        assert started.data["summary"].startswith("bash: started background job j1: echo pgid")
        assert 'job_output(id="j1")' in started.data["content"]
        # The output grew from one poll to a later one, and the job was then killed.
        grown = [text.count("tick ") for text in model.outputs if "tick " in text]
        assert len(grown) >= 2 and grown[-1] > grown[0]
        assert model.killed.startswith("job_kill j1: ended it: it was killed after ")
        assert model.pgid is not None
        await _until_group_gone(model.pgid)
        jobs = (await c.status()).jobs
        assert [(j.id, j.state) for j in jobs] == [("j1", "killed")]
        # Status events announced the job's start and its end.
        announced = [e.data["jobs"] for e in events if e.event == "status" and e.data["jobs"]]
        assert announced[0][0]["state"] == "running"
        await c.close()
        served.assert_all_requests_valid()


async def test_a_pause_leaves_the_job_running_and_says_so(workspace: Path, short_dir: Path) -> None:
    seconds = unique_seconds()
    command = f"(while true; do echo tick; sleep 0.1; done) & sleep {seconds}"
    replies = [
        _call("bash", command=command, background=True),
        _call("job_wait", id="j1", timeout_s=100),
        ScriptedReply(text="resumed"),
    ]
    try:
        async with running_pod(workspace, short_dir, replies=replies, allow_bash=True) as served:
            c = await served.client()
            await c.send("run", {"input": "start it and wait"})
            await c.wait_for("tool_call_done", name="job_wait", timeout=20)
            await c.wait_for("status", state="executing_tools")
            [sleeper] = wait_running(f"sleep {seconds}", 1)
            pgid = _pgid_of(sleeper)
            await c.send("pause")
            events = await collect_until(c, "run_end", timeout=20)
            assert events[-1].data == {"result": "paused"}
            [alert] = [e.data for e in events if e.event == "alert" and e.data["source"] == "jobs"]
            assert alert["level"] == "info"
            assert alert["message"].startswith(
                f"the turn was paused; 1 background job still runs: j1 (`{command}`, "
            )
            [waited] = [e.data for e in events if e.event == "tool_result"]
            assert waited["summary"] == "[Interrupted by user]"  # the wait, not the job
            # The job runs on: its process lives and its output keeps growing.
            assert not _group_gone(pgid) and proc_stat(sleeper) is not None
            before = (await c.status()).jobs[0]
            assert before.state == "running"
            deadline = asyncio.get_running_loop().time() + 10
            while (await c.status()).jobs[0].output_bytes <= before.output_bytes:
                assert asyncio.get_running_loop().time() < deadline, "the job stopped printing"
                await asyncio.sleep(0.05)
            # Resume: the turn goes on and the job still runs.
            await c.send("resume")
            events = await collect_until(c, "run_end", timeout=20)
            assert events[-1].data == {"result": "finished"}
            assert (await c.status()).jobs[0].state == "running"
            await c.close()
            served.assert_all_requests_valid()
        # Shutdown ended it.
        await _until_group_gone(pgid)
        assert gone(f"sleep {seconds}")
    finally:
        kill_all(f"sleep {seconds}")


async def test_shutdown_ends_the_jobs_process_group(workspace: Path, short_dir: Path) -> None:
    seconds = unique_seconds()
    command = f"setsid sleep {seconds + 1} & sleep {seconds}"
    replies = [_call("bash", command=command, background=True), ScriptedReply(text="started")]
    try:
        async with running_pod(workspace, short_dir, replies=replies, allow_bash=True) as served:
            c = await served.client()
            await c.send("run", {"input": "start it"})
            events = await collect_until(c, "run_end", timeout=20)
            assert events[-1].data == {"result": "finished"}
            [sleeper] = wait_running(f"sleep {seconds}", 1)
            wait_running(f"sleep {seconds + 1}", 1)
            pgid = _pgid_of(sleeper)
            await c.send("shutdown")
            await collect_until(c, "shutdown", timeout=20)
            await c.close()
            await asyncio.wait_for(served.task, 20)
        await _until_group_gone(pgid)
        assert gone(f"sleep {seconds}") and gone(f"sleep {seconds + 1}")  # setsid too
        # Its end was recorded before the session closed.
        [session] = (Path(os.environ["XDG_STATE_HOME"]) / "pod" / "sessions").rglob("*.jsonl")
        records = [json.loads(line) for line in session.read_text().splitlines()]
        jobs = [(r["phase"], r["id"], r.get("how")) for r in records if r["type"] == "job"]
        assert jobs == [("start", "j1", None), ("end", "j1", "shutdown")]
    finally:
        kill_all(f"sleep {seconds}")
        kill_all(f"sleep {seconds + 1}")


async def test_a_crash_ends_the_job_and_the_restart_reports_it_once(
    workspace: Path, short_dir: Path
) -> None:
    seconds = unique_seconds()
    command = f"echo first line; echo second line; sleep {seconds}"
    script = short_dir / "script.json"
    script.write_text(
        json.dumps(
            {
                "replies": [
                    {
                        "tool_calls": [
                            {"name": "bash", "input": {"command": command, "background": True}}
                        ]
                    },
                    {"text": "started"},
                ]
            }
        )
    )
    socket, session = short_dir / "p.sock", short_dir / "session.jsonl"
    proc = start_pod_process(workspace, socket, session, script)
    try:
        c = await PodClient.connect(socket)
        await c.send("run", {"input": "start it"})
        events = await collect_until(c, "run_end", timeout=20)
        assert events[-1].data == {"result": "finished"}
        wait_running(f"sleep {seconds}", 1)
        deadline = asyncio.get_running_loop().time() + 10
        while (await c.status()).jobs[0].output_bytes < len("first line\nsecond line\n"):
            assert asyncio.get_running_loop().time() < deadline, "the job never printed"
            await asyncio.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        await c.close()
        assert gone(f"sleep {seconds}"), "the job outlived its pod"

        # The restart: one alert, and the model hears of it with its output.
        script.write_text(json.dumps({"replies": [{"text": "noted"}, {"text": "again"}]}))
        proc = start_pod_process(workspace, socket, session, script, "--continue")
        c = await PodClient.connect(socket)
        alerts = [a["message"] for a in (await c.request("get_history")).data["alerts"]]
        assert [a for a in alerts if "background job" in a] == [
            "a background job was ended when the pod stopped unexpectedly: "
            f"j1 (`{command}`); the model is told, with the end of their output"
        ]
        await c.send("run", {"input": "what happened?"})
        events = await collect_until(c, "run_end", timeout=20)
        assert events[-1].data == {"result": "finished"}
        [note] = [e.data for e in events if e.event == "system_note" and e.data["origin"] == "jobs"]
        assert f"- j1 `{command}`: ran at least " in note["text"]
        assert "first line\nsecond line\n```" in note["text"]
        assert (await c.status()).jobs == []  # nothing of it runs
        await c.send("shutdown")
        await c.close()
        proc.wait(20)

        # A third start says nothing more about it.
        proc = start_pod_process(workspace, socket, session, script, "--continue")
        c = await PodClient.connect(socket)
        history = (await c.request("get_history")).data
        assert not [a for a in history["alerts"] if "background job" in a["message"]]
        notes = [i for i in history["items"] if i.get("origin") == "jobs"]
        assert len(notes) == 1
        await c.send("shutdown")
        await c.close()
        proc.wait(20)
    finally:
        if proc.poll() is None:
            proc.kill()
        kill_all(f"sleep {seconds}")
    records = [json.loads(line) for line in session.read_text().splitlines()[1:]]
    jobs = [(r["phase"], r["id"], r.get("how")) for r in records if r["type"] == "job"]
    assert jobs == [("start", "j1", None), ("end", "j1", "crash")]
    with contextlib.suppress(FileNotFoundError):
        assert not list((short_dir / "session.jobs").iterdir())


async def test_kill_job_from_a_client_and_the_model_hears_of_it(
    workspace: Path, short_dir: Path
) -> None:
    seconds = unique_seconds()
    command = f"echo up; sleep {seconds}"
    replies = [
        _call("bash", command=command, background=True),
        ScriptedReply(text="started"),
        ScriptedReply(text="heard"),
    ]
    try:
        async with running_pod(workspace, short_dir, replies=replies, allow_bash=True) as served:
            c = await served.client()
            await c.send("run", {"input": "start it"})
            await collect_until(c, "run_end", timeout=20)
            [sleeper] = wait_running(f"sleep {seconds}", 1)
            pgid = _pgid_of(sleeper)
            reply = await c.request("kill_job", {"id": "j1"}, timeout=20)
            assert reply.event == "status"
            [job] = reply.data["jobs"]
            assert (job["id"], job["state"]) == ("j1", "killed")
            await _until_group_gone(pgid)
            again = await c.request("kill_job", {"id": "j1"})
            assert again.data["code"] == "invalid_request"
            assert again.data["message"] == "job j1 is not running (killed)"
            unknown = await c.request("kill_job", {"id": "j9"})
            assert unknown.data["message"] == "no background job 'j9'; jobs: j1 (killed)"
            # The next turn begins with a note: the model did not kill it itself.
            await c.send("run", {"input": "anything new?"})
            events = await collect_until(c, "run_end", timeout=20)
            committed = [e for e in events if e.event in ("system_note", "user_message")]
            assert [e.event for e in committed] == ["system_note", "user_message"]
            assert (
                committed[0]
                .data["text"]
                .startswith(f"[Background jobs] j1 `{command}` was killed by the user after ")
            )
            await c.close()
            served.assert_all_requests_valid()
    finally:
        kill_all(f"sleep {seconds}")


async def test_a_cancel_leaves_the_job_running_and_says_so(
    workspace: Path, short_dir: Path
) -> None:
    seconds = unique_seconds()
    command = f"sleep {seconds}"
    replies = [
        _call("bash", command=command, background=True),
        _call("job_wait", id="j1", timeout_s=100),
    ]
    try:
        async with running_pod(workspace, short_dir, replies=replies, allow_bash=True) as served:
            c = await served.client()
            await c.send("run", {"input": "start it and wait"})
            await c.wait_for("tool_call_done", name="job_wait", timeout=20)
            await c.wait_for("status", state="executing_tools")
            await c.send("cancel")
            events = await collect_until(c, "run_end", timeout=20)
            assert events[-1].data == {"result": "cancelled"}
            [alert] = [e.data for e in events if e.event == "alert" and e.data["source"] == "jobs"]
            assert alert["message"].startswith(
                f"the turn was cancelled; 1 background job still runs: j1 (`{command}`, "
            )
            assert [j.state for j in (await c.status()).jobs] == ["running"]
            wait_running(f"sleep {seconds}", 1)
            await c.close()
            served.assert_all_requests_valid()
        assert gone(f"sleep {seconds}")
    finally:
        kill_all(f"sleep {seconds}")


async def test_a_crash_report_no_turn_heard_is_kept_in_the_session_at_shutdown(
    workspace: Path, short_dir: Path
) -> None:
    # A session a killed pod left: a job started and never ended, and what it printed.
    session = short_dir / "s.jsonl"
    start = JobRecord(phase="start", id="j4", command="make watch", spool="j4.log", started_ms=1)
    header = {"type": "session", "pod": "t", "workspace": str(workspace), "created_ms": 1}
    session.write_text(json.dumps(header) + "\n" + start.model_dump_json() + "\n")
    (short_dir / "s.jobs").mkdir()
    (short_dir / "s.jobs" / "j4.log").write_text("watching…\n")
    async with running_pod(
        workspace, short_dir, continue_=True, session=session, allow_bash=True
    ) as served:
        c = await served.client()
        alerts = [a["message"] for a in (await c.request("get_history")).data["alerts"]]
        assert any(a.startswith("a background job was ended when the pod stopped") for a in alerts)
        await c.send("shutdown")
        await collect_until(c, "shutdown", timeout=20)
        await c.close()
        await asyncio.wait_for(served.task, 20)
    records = [json.loads(line) for line in session.read_text().splitlines()[1:]]
    [note] = [r["item"] for r in records if r["type"] == "item"]
    assert note["origin"] == "jobs" and "watching…" in note["text"]
    ends = [(r["id"], r["how"]) for r in records if r["type"] == "job" and r["phase"] == "end"]
    assert ends == [("j4", "crash")]
    assert not (short_dir / "s.jobs").exists()
