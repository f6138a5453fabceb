"""An offline stand-in for a pod connection that replays a recorded conversation.

Only the snapshot tests use it: they need pixel-stable screens without a live pod, clocks or
temporary paths. Everything else in the TUI tests talks to a real pod.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from cli.tui.app import PodApp
from cli.tui.link import PodLink
from orchestrator.protocol import HistoryData, StatusData
from orchestrator.serving.client import ClientError, PodEvent

STATUS = {
    "name": "demo",
    "model": "scripted-demo",
    "provider": "scripted",
    "workspace": "/ws",
    "turn": 1,
    "usage": {"input_tokens": 412, "output_tokens": 96},
}
GREETING = "pod demo · scripted/scripted-demo · offline: no ANTHROPIC_API_KEY"

CONVERSATION: list[dict[str, Any]] = [
    {
        "kind": "user_message",
        "seq": 1,
        "turn": 1,
        "segments": [
            {"kind": "text", "text": "Why does "},
            {"kind": "file_ref", "path": "src/app.py"},
            {"kind": "text", "text": " fail with "},
            {"kind": "paste", "id": 1, "text": "Traceback:\n  File app.py\nValueError: 42"},
        ],
        "text": "",
    },
    {
        "kind": "system_message",
        "seq": 2,
        "turn": 1,
        "text": "[File: src/app.py]\ndef main():\n    return 42",
        "origin": "file_ref",
    },
    {
        "kind": "assistant",
        "seq": 3,
        "turn": 1,
        "blocks": [
            {"type": "text", "text": "Let me search for callers."},
            {"type": "tool_use", "id": "t1", "name": "grep", "input": {"pattern": "main("}},
        ],
        "stop_reason": "tool_use",
        "synthetic": False,
    },
    {
        "kind": "tool_result",
        "seq": 4,
        "turn": 1,
        "call_id": "t1",
        "summary": "grep: 2 matches in 1 file",
        "content": "src/app.py:1: def main():",
        "is_error": False,
        "synthetic": False,
    },
    {
        "kind": "assistant",
        "seq": 5,
        "turn": 1,
        "blocks": [
            {
                "type": "text",
                "text": "## Cause\n\n`main()` returns **42**, and the caller expects a "
                "string:\n\n- convert it with `str()`\n- or change the caller",
            }
        ],
        "stop_reason": "end_turn",
        "synthetic": False,
    },
]


@dataclass
class FakeLink:
    """Answers ``get_status`` / ``get_history`` from fixed data, then replays ``events``."""

    status_data: dict[str, Any]
    items: list[dict[str, Any]]
    events_to_send: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    sent: list[tuple[str, dict[str, Any] | None]] = field(default_factory=list)
    drained: bool = False
    _closed: asyncio.Event = field(default_factory=asyncio.Event)

    async def send(
        self, method: str, params: dict[str, Any] | None = None, *, id: Any = None
    ) -> None:
        self.sent.append((method, params))

    async def status(self, *, timeout: float = 10.0) -> StatusData:
        return StatusData.model_validate(self.status_data)

    async def history(self, *, timeout: float = 10.0) -> HistoryData:
        return HistoryData(items=self.items, greeting=GREETING)

    async def complete_files(
        self, prefix: str, *, limit: int = 50, timeout: float = 10.0
    ) -> list[str]:
        return [c for c in ("src/", "setup.py", "README.md") if c.startswith(prefix)]

    async def request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float = 10.0
    ) -> PodEvent:
        """Direct replies: the custom commands (none), else the pod is not there to ask."""
        if method == "list_commands":
            return PodEvent("commands", {"commands": []})
        raise ClientError(f"the fake link does not answer {method}")

    async def events(self) -> AsyncIterator[PodEvent]:
        for name, data in self.events_to_send:
            yield PodEvent(name, data)
        self.drained = True
        await self._closed.wait()

    async def close(self) -> None:
        self._closed.set()


def idle_link() -> FakeLink:
    """A finished turn with a file ref, a paste, a system note, a tool call and an alert."""
    return FakeLink(
        status_data={**STATUS, "status": "idle", "state": "idle"},
        items=CONVERSATION,
        events_to_send=[
            (
                "alert",
                {
                    "level": "warn",
                    "source": "provider",
                    "message": "overloaded, retried once",
                    "timestamp_ms": 0,
                },
            ),
        ],
    )


def paused_link() -> FakeLink:
    """A second turn paused mid-stream, with a synthetic read before it."""
    return FakeLink(
        status_data={**STATUS, "status": "running", "state": "requesting", "turn": 2},
        items=[
            *CONVERSATION,
            {
                "kind": "user_message",
                "seq": 6,
                "turn": 2,
                "segments": [{"kind": "text", "text": "Now write the fix, slowly."}],
                "text": "",
            },
            {
                "kind": "assistant",
                "seq": 7,
                "turn": 2,
                "blocks": [
                    {"type": "tool_use", "id": "p1", "name": "read_file", "input": {"path": "x"}}
                ],
                "stop_reason": "tool_use",
                "synthetic": True,
            },
            {
                "kind": "tool_result",
                "seq": 8,
                "turn": 2,
                "call_id": "p1",
                "summary": "read_file: x — 3 lines",
                "content": "a\nb\nc",
                "is_error": False,
                "synthetic": True,
            },
        ],
        events_to_send=[
            ("text_delta", {"text": "Here is the fix: change "}),
            ("text_delta", {"text": "`return 42` to"}),
            ("status", {**STATUS, "status": "running", "state": "pausing"}),
            ("status", {**STATUS, "status": "paused", "state": "paused"}),
            ("run_end", {"result": "paused"}),
        ],
    )


def build_app(link: FakeLink) -> PodApp:
    """The real app wired to a fake connection."""

    async def connect() -> PodLink:
        return link

    return PodApp(connect, clock=lambda: 0.0)


BRACKETS_COMMAND = r"echo [Hello World] && echo 'C:\temp\ [bold]not bold[/bold]'"
BRACKETS_OUTPUT = "[Hello World]\nC:\\temp\\ [bold]not bold[/bold]\n"


def brackets_link() -> FakeLink:
    """Text that markup would eat: brackets, ``[bold]`` literals, backslashes."""
    return FakeLink(
        status_data={**STATUS, "status": "idle", "state": "idle"},
        items=[
            {
                "kind": "user_message",
                "seq": 1,
                "turn": 1,
                "segments": [{"kind": "text", "text": r"why does [bold]x[/bold] print C:\path\ ?"}],
                "text": "",
            },
            {
                "kind": "assistant",
                "seq": 2,
                "turn": 1,
                "blocks": [
                    {
                        "type": "tool_use",
                        "id": "b1",
                        "name": "bash",
                        "input": {"command": BRACKETS_COMMAND},
                    }
                ],
                "stop_reason": "tool_use",
                "synthetic": False,
            },
            {
                "kind": "tool_result",
                "seq": 3,
                "turn": 1,
                "call_id": "b1",
                "summary": "[exit 0] [Hello World]",
                "content": BRACKETS_OUTPUT,
                "is_error": False,
                "synthetic": False,
            },
            {
                "kind": "system_message",
                "seq": 4,
                "turn": 1,
                "text": "[The previous turn was interrupted by the user.]",
                "origin": "interrupt",
            },
        ],
        events_to_send=[
            ("tool_call_start", {"id": "g1", "name": "grep"}),
            (
                "tool_call_done",
                {"id": "g1", "name": "grep", "arguments": {"pattern": r"\[x\]"}},
            ),
            (
                "tool_result",
                {
                    "id": "g1",
                    "summary": "[Interrupted by user]",
                    "content": None,
                    "is_error": False,
                    "synthetic": True,
                },
            ),
        ],
    )
