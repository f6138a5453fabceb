"""docs/sdk.md's three examples (examples/sdk/), run as written against a pod on its socket,
pods of a real ``pod host`` process the SDK starts, and (tests/e2e/test_sdk_http_e2e.py)
the HTTP API; offline, with the scripted provider."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from orchestrator.adapters.providers.scripted import ScriptedReply, ScriptedToolCall
from orchestrator.serving.sdk import connect_host, start_pod
from tests.e2e.harness import running_pod

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sdk"

ANSWER = [ScriptedReply(text="The answer, streamed.", chunk_size=3)]
APPROVALS = [
    ScriptedReply(
        text="On it.",
        tool_calls=[
            ScriptedToolCall(name="write_file", input={"path": "CHANGES.md", "content": "- fix\n"}),
            ScriptedToolCall(name="bash", input={"command": "touch ran"}),
        ],
    ),
    ScriptedReply(text="Written; no command run."),
]


def example(name: str) -> ModuleType:
    """An example file, imported as it is."""
    spec = importlib.util.spec_from_file_location(f"sdk_example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def script(path: Path, replies: list[ScriptedReply]) -> Path:
    """A scripted provider's file with these replies."""
    path.write_text(json.dumps({"replies": [r.model_dump(mode="json") for r in replies]}))
    return path


def scripted_user(tmp_path: Path, replies: list[ScriptedReply]) -> None:
    """The test's user config answers with ``replies`` (what ``start_pod`` loads, as the
    host would for ``pod chat``)."""
    config = tmp_path / "config" / "pod" / "config.toml"
    answers = script(tmp_path / "user-script.json", replies)
    config.write_text(
        f'provider = "scripted"\nscripted_script = "{answers}"\n\n' + config.read_text()
    )


@pytest.fixture
def host_stops() -> Iterator[None]:
    """Whatever a test left, the host it started leaves too."""
    yield
    import asyncio

    from orchestrator.serving.host import HostError, ask_host, host_running

    if host_running():
        with contextlib.suppress(HostError):
            asyncio.run(ask_host("stop"))


def check_approvals(workspace: Path, decisions: list[str]) -> None:
    assert sorted(decisions) == ["approved write_file", "denied bash"]
    assert (workspace / "CHANGES.md").read_text() == "- fix\n"
    assert not (workspace / "ran").exists()


async def test_the_examples_against_a_pod_on_its_socket(
    workspace: Path, short_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with running_pod(workspace, short_dir, replies=ANSWER) as pod:
        assert await example("one_shot").main(str(pod.socket), "what is it?") == "finished"
    assert "The answer, streamed.\n[finished;" in capsys.readouterr().out
    async with running_pod(workspace, short_dir, replies=ANSWER) as pod:
        # And as a script, the way docs/sdk.md runs it.
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(EXAMPLES / "one_shot.py"), str(pod.socket), "what is it?",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            cwd=EXAMPLES.parents[1],
        )  # fmt: skip
        out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()
    assert out.decode().startswith("The answer, streamed.\n[finished;")
    async with running_pod(
        workspace, short_dir, replies=APPROVALS, permissions={"mode": "default"}
    ) as pod:
        decisions = await example("approval").main(str(pod.socket), "note the fix")
    check_approvals(workspace, decisions)


async def _host_pod(workspace: Path, **options: Any) -> str:
    """A pod started in the host by the SDK; its name."""
    async with await start_pod(workspace, **options) as client:
        return (await client.status()).name


async def _shut_down(name: str) -> None:
    async with await connect_host(name) as client:
        await client.shutdown()


@pytest.mark.usefixtures("host_stops")
async def test_the_examples_against_pods_of_a_host(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted_user(tmp_path, ANSWER)
    workspaces = []
    for n in range(10):
        workspaces.append(tmp_path / f"w{n}")
        workspaces[-1].mkdir()
    results = await example("ten_pods").main("go", workspaces)
    assert results == {f"w{n}": "finished" for n in range(10)}
    printed = capsys.readouterr().out.splitlines()
    assert sorted(line.split(":")[0] for line in printed) == sorted(results)

    one = tmp_path / "one"
    one.mkdir()
    name = await _host_pod(one)
    assert await example("one_shot").main(name, "what is it?") == "finished"
    assert "The answer, streamed." in capsys.readouterr().out
    await _shut_down(name)

    asks = tmp_path / "asks"
    asks.mkdir()
    approvals = script(tmp_path / "approvals.json", APPROVALS)
    name = await _host_pod(asks, scripted_script=approvals, permission_mode="default")
    check_approvals(asks, await example("approval").main(name, "note the fix"))
    await _shut_down(name)
