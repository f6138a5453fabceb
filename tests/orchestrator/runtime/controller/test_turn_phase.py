"""The turn's start phases (``status.phase``): what a client asking ``get_status`` sees while
hooks decide a prompt or add their context, and that nothing is left of them after.

A hook command here blocks until the test lets it go (a gate file), so the phase is observed
while the turn is really in it; the waits are for the hook to start, with generous ceilings.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from orchestrator.adapters.providers.scripted import ScriptedReply
from orchestrator.core.history import UserMessage
from orchestrator.protocol import parse_request
from orchestrator.serving.pod import Pod
from tests.orchestrator.runtime.test_unload import Harness, held_for_hooks, send, settled


async def get_status(pod: Pod) -> dict[str, Any]:
    """``get_status`` as a client sends it; the reply's data."""
    request, params = parse_request(json.dumps({"method": "get_status", "id": 7}))
    reply: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
    pod.methods.handle(
        request.method, params, request.id, lambda line: reply.set_result(json.loads(line))
    )
    answer = await asyncio.wait_for(reply, 30)
    assert answer["event"] == "status" and answer["data"]["id"] == 7
    data: dict[str, Any] = answer["data"]
    return data


async def started(marker: Path) -> None:
    """Wait for a hook command to say it started (it touches ``marker``)."""
    for _ in range(1500):
        if marker.exists():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"the hook never started ({marker.name} was not touched)")


def blocking_hook(tmp_path: Path, name: str) -> tuple[str, Path, Path]:
    """A hook command that says it started, then waits for its gate file."""
    gate, marker = tmp_path / f"{name}.gate", tmp_path / f"{name}.started"
    command = f"cat >/dev/null; touch {marker}; while [ ! -e {gate} ]; do sleep 0.02; done"
    return command, gate, marker


async def test_the_phase_shows_while_prompt_hooks_decide_and_is_null_after(
    workspace: Path, tmp_path: Path
) -> None:
    command, gate, marker = blocking_hook(tmp_path, "prompt")
    hooks = {"UserPromptSubmit": [{"matcher": "", "hooks": [{"command": command}]}]}
    pod, events = Harness(workspace, hooks=hooks, sandbox={"mode": "off"}).build(
        [ScriptedReply(text="done")]
    )
    assert (await get_status(pod))["phase"] is None
    send(pod, "run", input="hello")
    await started(marker)

    status = await get_status(pod)
    assert (status["status"], status["phase"]) == ("running", "prompt_submit")
    # The prompt is not in the conversation while its hooks decide.
    assert not [i for i in pod.controller.history.items if isinstance(i, UserMessage)]

    gate.touch()
    await pod.controller.wait_idle()
    assert events.of("run_end") == [{"result": "finished"}]
    assert (await get_status(pod))["phase"] is None
    assert [i.text for i in pod.controller.history.items if isinstance(i, UserMessage)] == ["hello"]
    await pod.controller.close_hooks()
    pod.controller.transcript.session.close()


async def test_a_turn_paused_in_its_prompt_phase_is_in_no_phase(
    workspace: Path, tmp_path: Path
) -> None:
    _, pod, gate = await held_for_hooks(workspace, tmp_path, input="hello")
    status = await get_status(pod)
    assert (status["status"], status["phase"]) == ("paused", None)
    # The held prompt is still the turn's: a resume asks the hooks again.
    assert pod.controller.opening.prompt is not None
    gate.touch()
    assert send(pod, "resume") == []
    await settled(pod)
    assert (await get_status(pod))["phase"] is None
    assert pod.controller.opening.prompt is None  # passed by the hooks, and committed
    assert [i.text for i in pod.controller.history.items if isinstance(i, UserMessage)] == ["hello"]
    await pod.controller.close_hooks()
    pod.controller.transcript.session.close()


async def test_the_first_turn_waits_for_session_start_hooks_in_their_phase(
    workspace: Path, tmp_path: Path
) -> None:
    command, gate, marker = blocking_hook(tmp_path, "session")
    hooks = {"SessionStart": [{"matcher": "", "hooks": [{"command": command}]}]}
    pod, events = Harness(workspace, hooks=hooks, sandbox={"mode": "off"}).build(
        [ScriptedReply(text="done")]
    )
    pod.controller.start_session_hooks("startup")
    send(pod, "run", input="hello")
    await started(marker)
    # The hook may have started before the turn reached its wait: ask until it has.
    for _ in range(1500):
        status = await get_status(pod)
        if status["phase"] is not None:
            break
        await asyncio.sleep(0.02)
    assert (status["status"], status["phase"]) == ("running", "session_start")

    gate.touch()
    await pod.controller.wait_idle()
    assert events.of("run_end") == [{"result": "finished"}]
    assert (await get_status(pod))["phase"] is None
    await pod.controller.close_hooks()
    pod.controller.transcript.session.close()
