"""An in-process pod on a real Unix socket, driven by real protocol clients."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.fake_api import FakeAnthropic
from orchestrator.adapters.providers.anthropic import AnthropicProvider
from orchestrator.adapters.providers.base import Provider
from orchestrator.adapters.providers.scripted import (
    ScriptedProvider,
    ScriptedReply,
    ScriptedToolCall,
)
from orchestrator.capabilities.hooks.chain import InterceptorChain
from orchestrator.config.model import PodConfig
from orchestrator.core.validator import validate_wire
from orchestrator.serving.client import PodClient, PodEvent
from orchestrator.serving.pod import Pod, serve_pod
from orchestrator.serving.server import socket_is_live


@dataclass
class RunningPod:
    """A served pod, its provider, and the task serving it."""

    socket: Path
    provider: ScriptedProvider
    config: PodConfig
    task: asyncio.Task[Pod]

    async def client(self) -> PodClient:
        """A new protocol client connected to the pod."""
        return await PodClient.connect(self.socket)

    def assert_all_requests_valid(self) -> None:
        """Every request the provider received passed the wire validator."""
        for n, request in enumerate(self.provider.requests):
            on = request.thinking is not None and request.thinking["type"] != "disabled"
            violations = validate_wire(request.messages, thinking=on)
            assert not violations, f"request {n} invalid: {violations}"


UNATTENDED: dict[str, Any] = {"mode": "accept-edits", "deny": ["bash"]}
"""Permissions of a pod with nobody to approve: edits run, ``bash`` only with ``allow_bash``."""


@contextlib.asynccontextmanager
async def running_pod(
    workspace: Path,
    sock_dir: Path,
    *,
    replies: list[ScriptedReply] | None = None,
    continue_: bool = False,
    interceptors: InterceptorChain | None = None,
    provider: Provider | None = None,
    loaded: PodConfig | None = None,
    **config: Any,
) -> AsyncIterator[RunningPod]:
    """Serve a pod (scripted provider unless one is given) for the duration of the block.

    ``loaded`` is a config built elsewhere (e.g. by ``load_config``); ``config`` keys build one.
    Unless the test sets ``permissions``, file edits run without asking and ``bash`` is only
    offered with ``allow_bash``: the tests that are not about approval run unattended.
    """
    config.setdefault(
        "permissions", {"mode": "accept-edits"} if config.get("allow_bash") else UNATTENDED
    )
    # Commands reach outside the workspace in many tests (logs in the test's folder); the
    # sandbox is tested on its own (tests/orchestrator/adapters/sandbox, tests/e2e/test_sandbox_e2e.py).
    config.setdefault("sandbox", {"mode": "off"})
    scripted = ScriptedProvider(replies=list(replies or []))
    cfg = loaded or PodConfig(workspace=workspace, name="t", provider="scripted", **config)
    if cfg.context_window is not None:
        scripted.window = cfg.context_window
    socket = sock_dir / "pod.sock"
    ready = asyncio.Event()
    task = asyncio.create_task(
        serve_pod(
            cfg,
            socket_path=socket,
            provider=provider or scripted,
            ready=ready,
            continue_=continue_,
            interceptors=interceptors,
        )
    )
    waiter = asyncio.create_task(ready.wait())
    await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        task.result()
    # A scripted provider the test built (a responder) is the one whose requests it checks.
    used = provider if isinstance(provider, ScriptedProvider) else scripted
    pod = RunningPod(socket=socket, provider=used, config=cfg, task=task)
    try:
        yield pod
    finally:
        if not task.done():
            with contextlib.suppress(Exception):
                c = await pod.client()
                await c.send("shutdown")
                await c.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(task, 10)
        if not task.done():
            task.cancel()


def what_it_said(proc: subprocess.Popen[bytes]) -> str:
    """A pod process's exit code and the end of its stderr, for a failure message (it is
    ended first if it still runs): what the pod said as it went."""
    code = proc.poll()
    if code is None:
        proc.terminate()
        proc.wait(10)
    said = (proc.stderr.read() if proc.stderr else b"").decode(errors="replace")[-3000:]
    return f"exit {code}: {said}"


def start_pod_process(
    workspace: Path,
    socket: Path,
    session: Path,
    script: Path,
    *extra: str,
    unattended: bool = True,
    preexec: Callable[[], None] | None = None,
) -> subprocess.Popen[bytes]:
    """``pod serve`` in its own process with a scripted provider and bash, once it listens.

    For what an in-process pod cannot survive: a kill -9, or a regression that freezes the
    whole interpreter (a regex holding the GIL), which must fail the test, not hang it.
    """
    args = [
        sys.executable, "-m", "cli", "serve",
        "--workspace", str(workspace),
        "--socket", str(socket),
        "--session", str(session),
        "--provider", "scripted",
        "--script", str(script),
        # Unattended: nobody is there to approve, so bash and edits run unasked.
        *(["--allow-bash", "--permission-mode", "accept-edits"] if unattended else []),
        *extra,
    ]  # fmt: skip
    proc = subprocess.Popen(
        args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=preexec
    )
    deadline = time.monotonic() + 20
    while not socket_is_live(socket):
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        assert time.monotonic() < deadline, "pod did not start"
        time.sleep(0.05)
    return proc


async def collect_until(
    client: PodClient, event: str, *, timeout: float = 10.0, **match: Any
) -> list[PodEvent]:
    """Every event up to and including the first ``event`` matching ``match``."""
    seen: list[PodEvent] = []

    async def scan() -> list[PodEvent]:
        while True:
            got = await client.next_event()
            assert got is not None, (
                f"connection closed before {event}; saw {[e.event for e in seen]}"
            )
            seen.append(got)
            if got.event == event and all(got.data.get(k) == v for k, v in match.items()):
                return seen

    return await asyncio.wait_for(scan(), timeout)


async def run_unattended(
    client: PodClient, *, timeout: float = 30.0, message: str = "nobody is there to approve"
) -> list[PodEvent]:
    """Every event up to ``run_end``, denying each approval request as it comes (like a
    client that cannot ask anyone)."""
    seen: list[PodEvent] = []

    async def scan() -> list[PodEvent]:
        while True:
            got = await client.next_event()
            assert got is not None, f"connection closed; saw {[e.event for e in seen]}"
            seen.append(got)
            if got.event == "approval_request":
                await client.send("deny", {"id": got.data["id"], "message": message})
            if got.event == "run_end":
                return seen

    return await asyncio.wait_for(scan(), timeout)


def names(events: list[PodEvent]) -> list[str]:
    """Event names, with consecutive text deltas collapsed (their count is not behaviour)."""
    out: list[str] = []
    for e in events:
        if e.event in ("text_delta", "tool_call_args_delta") and out and out[-1] == e.event:
            continue
        out.append(e.event)
    return out


__all__ = [
    "RunningPod",
    "ScriptedReply",
    "ScriptedToolCall",
    "collect_until",
    "names",
    "running_pod",
    "start_pod_process",
]


def fake_provider(fake: FakeAnthropic, model: str = "fake-model") -> AnthropicProvider:
    """The pod's real Anthropic provider, pointed at the fake Messages API."""
    return AnthropicProvider(
        model, api_key="test-key", base_url=fake.base_url, retry_base_delay_s=0.01
    )
