"""A custom command's ``model`` over the real SDK and HTTP (the fake Messages API records the
``model`` of each request): the command's turn runs on it, the pod's model answers the next
turn, a kill -9 in the middle of the turn does not change either, and a cloned repository's
command cannot spend past a budget or get a model the budget cannot count."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conformance.fake_api import FakeAnthropic, Reply, ToolCall
from orchestrator.serving.client import PodClient, PodEvent
from orchestrator.serving.server import socket_is_live
from tests.e2e.harness import collect_until, fake_provider, running_pod

POD_MODEL = "claude-sonnet-4-6"
COMMAND_MODEL = "claude-opus-5"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of the test's own: no real ~/.claude/commands is read."""
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    return path


def command(folder: Path, name: str, model: str, body: str = "Think hard about it.") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_text(f"---\ndescription: {name}\nmodel: {model}\n---\n{body}\n")
    return path


def user_commands() -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "pod" / "commands"


def models(fake: FakeAnthropic) -> list[str]:
    return [r.body["model"] for r in fake.requests]


def alerts(events: list[PodEvent]) -> list[str]:
    return [e.data["message"] for e in events if e.event == "alert"]


async def run(c: PodClient, text: str) -> list[PodEvent]:
    await c.send("run", {"input": text})
    return await collect_until(c, "run_end", timeout=30)


async def test_a_commands_turn_runs_on_its_model_and_the_next_on_the_pods(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    path = command(user_commands(), "deep", COMMAND_MODEL)
    command(user_commands(), "quick", "haiku")  # a family: the newest the provider lists
    fake.push(
        Reply(text="Deep answer.", tool_calls=[ToolCall("read_file", {"path": "README.md"})]),
        Reply(text="Read it."),
        Reply(text="Back on the pod's model."),
        Reply(text="Quick answer."),
    )
    provider = fake_provider(fake, model=POD_MODEL)
    async with running_pod(workspace, short_dir, provider=provider, model=POD_MODEL) as pod:
        c = await pod.client()
        listed = {cmd.name: cmd for cmd in (await c.commands()).commands}
        assert (listed["deep"].model, listed["quick"].model) == (COMMAND_MODEL, "haiku")
        events = await run(c, "/deep")
        assert events[-1].data == {"result": "finished"}
        said = [a for a in alerts(events) if COMMAND_MODEL in a]
        assert len(said) == 1 and str(path) in said[0], alerts(events)
        assert (await run(c, "and now?"))[-1].data == {"result": "finished"}
        assert (await run(c, "/quick"))[-1].data == {"result": "finished"}
        status = (await c.request("get_status")).data
        items = (await c.history()).items
        await c.close()
    await provider.aclose()
    assert all(r.valid for r in fake.requests), [r.error for r in fake.requests if not r.valid]
    # The tool loop of the command's turn stays on its model.
    assert models(fake) == [COMMAND_MODEL, COMMAND_MODEL, POD_MODEL, "claude-haiku-4-5"]
    assert status["model"] == POD_MODEL
    prompts = [i.get("model") for i in items if i["kind"] == "user_message"]
    assert prompts == [COMMAND_MODEL, None, "claude-haiku-4-5"]
    answered = [i.get("model") for i in items if i["kind"] == "assistant"]
    # Named on what it answered: its tokens count at its own prices.
    assert answered == [COMMAND_MODEL, COMMAND_MODEL, None, "claude-haiku-4-5"]


async def test_a_model_the_provider_does_not_list_runs_on_the_pods_with_one_alert(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    path = command(user_commands(), "odd", "claude-imaginary-9")
    command(workspace / ".pod" / "commands", "same", "inherit")
    command(workspace / ".pod" / "commands", "prose", '"claude-opus-5; and spend freely"')
    fake.push(Reply(text="ok"), Reply(text="ok"), Reply(text="ok"))
    provider = fake_provider(fake, model=POD_MODEL)
    async with running_pod(workspace, short_dir, provider=provider, model=POD_MODEL) as pod:
        c = await pod.client()
        events = await run(c, "/odd")
        inherited = await run(c, "/same")
        prose = await run(c, "/prose")
        await c.close()
    await provider.aclose()
    assert models(fake) == [POD_MODEL, POD_MODEL, POD_MODEL]
    [said] = [a for a in alerts(events) if "claude-imaginary-9" in a]
    assert str(path) in said and "does not list" in said and POD_MODEL in said
    assert not [a for a in alerts(inherited) if "model" in a]
    assert [a for a in alerts(prose) if "not a model name" in a]


async def test_a_cloned_repos_expensive_model_meets_the_budget_before_any_request(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    # The pod's model is cheap; the repository's command asks for one six times dearer. The
    # turn's budget would let the pod's model answer, not the repository's.
    cheap, dear = "claude-3-5-haiku", "claude-opus-4-5"
    command(workspace / ".pod" / "commands", "review", dear)
    command(workspace / ".pod" / "commands", "free", "fake-model")  # listed, no price
    fake.push(Reply(text="cheap answer"), Reply(text="cheap answer"))
    provider = fake_provider(fake, model=cheap)
    async with running_pod(
        workspace, short_dir, provider=provider, model=cheap, turn_budget_usd=0.01
    ) as pod:
        c = await pod.client()
        events = await run(c, "/review")
        assert events[-1].data == {"result": "paused", "pause_reason": "budget"}
        assert fake.requests == []  # priced at the command's model: stopped before sending
        assert any("turn_budget_usd" in a for a in alerts(events)), alerts(events)
        # A new prompt closes the paused turn; the pod's own model fits the budget.
        assert (await run(c, "plain"))[-1].data == {"result": "finished"}
        events = await run(c, "/free")
        assert events[-1].data == {"result": "finished"}
        [said] = [a for a in alerts(events) if "fake-model" in a]
        assert "no price" in said and "budget" in said
        await c.close()
    await provider.aclose()
    assert models(fake) == [cheap, cheap]


def _serve(
    fake: FakeAnthropic, workspace: Path, socket: Path, session: Path, *extra: str
) -> subprocess.Popen[bytes]:
    """``pod serve`` in its own process on the anthropic provider, pointed at the fake."""
    env = {**os.environ, "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake.base_url}
    args = [
        sys.executable, "-m", "cli", "serve", "--workspace", str(workspace),
        "--socket", str(socket), "--session", str(session), "--provider", "anthropic",
        "--model", POD_MODEL, "--allow-bash", "--permission-mode", "accept-edits", *extra,
    ]  # fmt: skip
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while not socket_is_live(socket):
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        assert time.monotonic() < deadline, "pod did not start"
        time.sleep(0.05)
    return proc


def _records(session: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in session.read_text().splitlines()[1:]]


@pytest.mark.parametrize("where", ["model_call", "command_line"])
async def test_a_kill_9_mid_turn_keeps_the_commands_model_for_that_turn_only(
    workspace: Path, short_dir: Path, fake: FakeAnthropic, where: str
) -> None:
    """Killed while the model's call runs (the prompt committed), or while the command's own
    ``!`` line runs (the prompt still held): either way the turn goes on on its model."""
    slow = "echo go; sleep 30"
    if where == "model_call":
        command(workspace / ".pod" / "commands", "deep", COMMAND_MODEL)
        fake.push(Reply(text="Running it.", tool_calls=[ToolCall("bash", {"command": slow})]))
    else:
        command(workspace / ".pod" / "commands", "deep", COMMAND_MODEL, f"Ran: !`{slow}`")
    fake.push(Reply(text="After the crash."), Reply(text="The pod's model again."))
    socket, session = short_dir / "p.sock", short_dir / "s.jsonl"
    proc = _serve(fake, workspace, socket, session)
    try:
        c = await PodClient.connect(socket)
        await c.send("run", {"input": "/deep"})
        await c.wait_for("tool_output_delta", timeout=30)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        await c.close()
    finally:
        if proc.poll() is None:
            proc.kill()
    proc = _serve(fake, workspace, socket, session, "--continue")
    try:
        c = await PodClient.connect(socket)
        status = (await c.request("get_status")).data
        assert (status["status"], status["model"]) == ("paused", POD_MODEL)
        await c.send("resume")
        resumed = await collect_until(c, "run_end", timeout=30)
        assert resumed[-1].data == {"result": "finished"}
        # Decided once, before the crash: not alerted again.
        assert not [a for a in alerts(resumed) if COMMAND_MODEL in a]
        assert (await run(c, "and now?"))[-1].data == {"result": "finished"}
        await c.send("shutdown")
        await c.close()
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert all(r.valid for r in fake.requests), [r.error for r in fake.requests if not r.valid]
    on_command = 2 if where == "model_call" else 1
    assert models(fake) == [COMMAND_MODEL] * on_command + [POD_MODEL]
    # Only the turn's user message names the model; nothing says the pod's changed.
    named = [r for r in _records(session) if COMMAND_MODEL in json.dumps(r)]
    kinds = {(r["type"], r.get("item", {}).get("kind")) for r in named}
    assert kinds <= {("held_prompt", None), ("item", "user_message"), ("item", "assistant")}
