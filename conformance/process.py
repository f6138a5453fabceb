"""Starting and stopping the pod under test, each with its own fake Messages API.

A :class:`PodProcess` is one pod under test: the command given by the user (placeholders
``{socket}``, ``{base_url}``, ``{workspace}`` filled in), started in its own session with
``ANTHROPIC_BASE_URL`` / ``ANTHROPIC_API_KEY`` pointing at a private
:class:`~conformance.fake_api.FakeAnthropic`. The fake answers from a :class:`Stimuli`
responder: a user text carrying ``[[kit:slow-text:N]]`` gets a slow streamed reply,
``[[kit:slow-tool:N]]`` a reply calling the slow tool twice, ``[[kit:approval-tool:N]]`` a
reply calling the approval tool once, ``[[kit:input-tool:N]]`` a reply calling the input tool
once, anything else a short echo; when the kit arms it, the
next request (a compaction's summary request) gets the slow stream whatever it says. Under
the thinking profile (:attr:`KitOptions.thinking`) the pod's command gets
:attr:`KitOptions.thinking_args` and every reply of its fake thinks. A
:class:`PodPool` keeps pods warming in the background and reuses a pod a row left idle, so a
full run takes seconds per stopping row, not per row.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

from conformance.fake_api import FakeAnthropic, Reply, Step, ToolCall
from conformance.options import (
    DEFAULT_APPROVAL_TOOL,
    DEFAULT_INPUT_TOOL,
    DEFAULT_SLOW_TOOL,
    KIT_MCP_SERVER,
    KitOptions,
)
from orchestrator.errors import SetupError

__all__ = [
    "DEFAULT_APPROVAL_TOOL",
    "DEFAULT_INPUT_TOOL",
    "DEFAULT_SLOW_TOOL",
    "KIT_MCP_SERVER",
    "KitOptions",
    "PodPool",
    "PodProcess",
    "PodStartError",
    "Stimuli",
    "last_user_text_block",
]

_SLOW_TEXT = "Conformance stream. " * 30  # 600 characters
_SLOW_CHUNK = 4
_SLOW_DELAY_S = 0.04  # about six seconds of streaming: a wide window, cut short by the kit


class PodStartError(SetupError):
    """The pod under test did not start listening on its socket."""


# -- the fake API's side --------------------------------------------------------------------


class Stimuli:
    """The responder of a pod's fake API: slow answers on request, short echoes otherwise."""

    def __init__(
        self,
        slow_tool: dict[str, Any],
        approval_tool: dict[str, Any],
        input_tool: dict[str, Any] | None = None,
    ) -> None:
        self.slow_tool = slow_tool
        self.approval_tool = approval_tool
        self.input_tool = dict(DEFAULT_INPUT_TOOL) if input_tool is None else input_tool
        self._slow_next = False
        self._lock = threading.Lock()
        self._used: set[str] = set()
        self._counter = itertools.count(1)

    def token(self, kind: str) -> str:
        """A fresh marker: ``[[kit:<kind>:N]]``."""
        return f"[[kit:{kind}:{next(self._counter)}]]"

    def slow_next(self) -> None:
        """Answer the next request with the slow stream: a summary request carries no marker."""
        with self._lock:
            self._slow_next = True

    @property
    def armed(self) -> bool:
        """Whether the slow stream still waits for its request."""
        with self._lock:
            return self._slow_next

    def disarm(self) -> None:
        """Forget an unused slow stream, so it cannot slow a later row's request down."""
        with self._lock:
            self._slow_next = False

    def respond(self, body: dict[str, Any]) -> Step | None:
        """The step for a request: a marker is honoured once, so a resumed turn ends fast."""
        with self._lock:
            slow, self._slow_next = self._slow_next, False
        if slow:
            return _slow_stream()
        text = last_user_text_block(body)
        for kind in ("slow-text", "slow-tool", "approval-tool", "input-tool"):
            start = text.find(f"[[kit:{kind}:")
            if start < 0:
                continue
            marker = text[start : text.find("]]", start) + 2]
            with self._lock:
                if marker in self._used:
                    return None
                self._used.add(marker)
            if kind == "slow-text":
                return _slow_stream()
            if kind in ("approval-tool", "input-tool"):
                tool = self.approval_tool if kind == "approval-tool" else self.input_tool
                ask = ToolCall(name=tool["name"], input=dict(tool.get("input", {})))
                text = "Asking for approval." if kind == "approval-tool" else "Asking for input."
                return Reply(text=text, tool_calls=[ask])
            call = ToolCall(
                name=self.slow_tool["name"], input=dict(self.slow_tool.get("input", {}))
            )
            # Two calls: a pod that runs calls one at a time leaves the second never started.
            return Reply(text="Running the slow tool.", tool_calls=[call, call])
        return None


def _slow_stream() -> Reply:
    return Reply(text=_SLOW_TEXT, chunk_size=_SLOW_CHUNK, delay_s=_SLOW_DELAY_S)


def last_user_text_block(body: dict[str, Any]) -> str:
    """The last text block of the last user message (where a new input lands)."""
    for message in reversed(body.get("messages") or []):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        texts = [
            str(b.get("text", ""))
            for b in content or []
            if isinstance(b, dict) and b.get("type") == "text"
        ]
        return texts[-1] if texts else ""
    return ""


# -- the pod process ------------------------------------------------------------------------


class PodProcess:
    """One pod under test, its fake API and its private directories."""

    def __init__(self, options: KitOptions) -> None:
        self.options = options
        self.dir = Path(tempfile.mkdtemp(prefix="pc"))
        self.socket = self.dir / "pod.sock"
        self.workspace = self.dir / "ws"
        self.workspace.mkdir()
        (self.workspace / "README.md").write_text("# Conformance workspace\n")
        self.stimuli = Stimuli(options.slow_tool, options.approval_tool, options.input_tool)
        self.api = FakeAnthropic(
            responder=self.stimuli.respond,
            thinking_profile=options.thinking,
            server_tools_profile=options.web,
        ).start()
        self.log_path = self.dir / "pod.log"
        values = {
            "{socket}": str(self.socket),
            "{base_url}": self.api.base_url,
            "{workspace}": str(self.workspace),
        }
        command = [
            *options.command,
            *(options.thinking_args if options.thinking else ()),
            *(options.web_args if options.web else ()),
        ]
        self.argv = [_fill(arg, values) for arg in command]
        self.env = dict(os.environ)
        self.env.update(
            ANTHROPIC_BASE_URL=self.api.base_url,
            ANTHROPIC_API_KEY="fake-key",
            XDG_STATE_HOME=str(self.dir / "state"),
        )
        try:
            self.proc = self._spawn(self.argv)
        except OSError as exc:
            self.api.stop()
            shutil.rmtree(self.dir, ignore_errors=True)
            raise PodStartError(f"cannot start {self.argv[0]!r}: {exc}") from None
        self.ready = False
        self.rows = 0

    def _spawn(self, argv: list[str]) -> subprocess.Popen[bytes]:
        with open(self.log_path, "ab") as log:
            return subprocess.Popen(
                argv,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def crash(self) -> None:
        """``kill -9`` the pod's own process (not its group: what it started must end with
        it by its own means), and reap it."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def restart(self, extra: tuple[str, ...]) -> None:
        """Start the pod again after a crash: the same command, socket, workspace, state
        directory and fake API, plus ``extra`` (how this pod is told to continue its
        session). Call :meth:`wait_ready` next."""
        if self.proc.poll() is None:
            raise RuntimeError("restart of a pod that still runs")
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # what lingers in the old group
        self.argv = [*self.argv, *extra]
        self.ready = False
        try:
            self.proc = self._spawn(self.argv)
        except OSError as exc:
            raise PodStartError(f"cannot restart {self.argv[0]!r}: {exc}") from None

    def log_tail(self, lines: int = 15) -> str:
        """The last lines the pod printed."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    async def wait_ready(self) -> None:
        """Wait until something accepts connections on the socket (a stale socket file of a
        crashed pod refuses them, so it is waited past)."""
        deadline = time.monotonic() + self.options.startup_timeout_s
        while not self.ready:
            code = self.proc.poll()
            if code is not None:
                raise PodStartError(
                    f"the pod exited with code {code} before listening on {self.socket}\n"
                    f"command: {' '.join(self.argv)}\n{self.log_tail()}"
                )
            if self.socket.exists():
                try:
                    _, writer = await asyncio.open_unix_connection(str(self.socket))
                except OSError:
                    pass
                else:
                    writer.close()
                    with contextlib.suppress(Exception):
                        await writer.wait_closed()
                    self.ready = True
                    return
            if time.monotonic() > deadline:
                raise PodStartError(
                    f"the pod did not listen on {self.socket} within "
                    f"{self.options.startup_timeout_s:g} s\n{self.log_tail()}"
                )
            await asyncio.sleep(0.02)

    async def wait_exit(self, timeout: float) -> int | None:
        """The exit code, or None if the pod is still running after ``timeout``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            code = self.proc.poll()
            if code is not None:
                return code
            await asyncio.sleep(0.02)
        return self.proc.poll()

    def stop(self) -> None:
        """Terminate the pod's process group (if alive), stop the fake API, clean up."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=3)
        else:
            # The pod exited on its own; its tools' processes may linger in the group.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.api.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def _fill(arg: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        arg = arg.replace(key, value)
    return arg


class PodPool:
    """Pods warming in the background, and pods a row left idle, ready for the next row."""

    def __init__(self, options: KitOptions) -> None:
        self.options = options
        self._reusable: list[PodProcess] = []
        self._warming: deque[PodProcess] = deque()
        self.started = 0
        self.offers_task: bool | None = None
        """Whether the pod under test offers the model a ``task`` tool, once a tree case
        has seen its first request (None before): the other tree cases skip without one."""
        self.offers_input: bool | None = None
        """Whether the pod offers the model the kit's input tool, once an ``awaiting_input``
        row has seen its setup's request (None before): the other such rows skip without."""

    def _prime(self) -> None:
        while len(self._warming) < self.options.warm_pods:
            self._warming.append(PodProcess(self.options))
            self.started += 1

    async def take(self, *, fresh: bool = False) -> PodProcess:
        """A pod at rest in its initial state: a reused one if any (unless ``fresh``: one
        that never ran a turn), else a fresh one."""
        while self._reusable and not fresh:
            pod = self._reusable.pop()
            if pod.proc.poll() is None:
                return pod
            pod.stop()
        if not self._warming:
            self._warming.append(PodProcess(self.options))
            self.started += 1
        pod = self._warming.popleft()
        self._prime()
        try:
            await pod.wait_ready()
        except PodStartError:
            pod.stop()
            raise
        return pod

    def give_back(self, pod: PodProcess) -> None:
        """Keep a pod that ended its row idle and healthy for the next row."""
        self._reusable.append(pod)

    def close(self) -> None:
        """Stop every pod the pool holds."""
        for pod in [*self._reusable, *self._warming]:
            pod.stop()
        self._reusable.clear()
        self._warming.clear()
